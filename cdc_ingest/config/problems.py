"""Turn pydantic validation errors into :class:`ConfigProblem`s: YAML path, what, and the fix.

Pydantic's own wording never reaches the user: it names Python types and echoes input values,
and an echoed value could be a password. Our validators raise :func:`problem` errors that carry
their message and fix; everything else is mapped here by error type.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic.fields import FieldInfo
from pydantic_core import InitErrorDetails, PydanticCustomError

from cdc_ingest.errors import ConfigProblem

PASS_THROUGH_PREFIX = "properties."

Found = list[tuple[tuple[str | int, ...], str, str]]
"""Cross-field problems of one model: ``(loc, message, fix)``, raised by :func:`raise_problems`."""

_TYPE_MESSAGES: dict[str, tuple[str, str]] = {
    "int_parsing": ("must be a whole number", "write digits only, e.g. 3306"),
    "int_type": ("must be a whole number", "write digits only, e.g. 3306"),
    "int_from_float": ("must be a whole number", "remove the fraction"),
    "bool_parsing": ("must be true or false", "write true or false"),
    "bool_type": ("must be true or false", "write true or false"),
    "string_type": ("must be a text value", "quote the value: 'like this'"),
    "dict_type": ("must be a mapping of options", "indent 'key: value' lines under it"),
    "model_type": ("must be a mapping of options", "indent 'key: value' lines under it"),
    "model_attributes_type": ("must be a mapping of options", "indent 'key: value' lines"),
    "list_type": ("must be a list", "write one '- item' line per entry"),
    "tuple_type": ("must be a list", "write one '- item' line per entry"),
    "enum": ("is not a supported value", "use one of the documented values"),
}


def problem(message: str, fix: str) -> PydanticCustomError:
    """An error for a pydantic validator that reaches the user as written."""
    return PydanticCustomError("config", "{message}", {"message": message, "fix": fix})


def raise_problems(title: str, found: Found) -> None:
    """Raise every cross-field problem of a model at once: ``(loc, message, fix)`` triples."""
    if not found:
        return
    details = [
        InitErrorDetails(type=problem(message, fix), loc=loc, input=None)
        for loc, message, fix in found
    ]
    raise ValidationError.from_exception_data(title, details)


# Options of related Flink/VVR connectors that users bring along, and what to do instead.
_FOREIGN_OPTIONS = {
    "topic": "topics come from route sink-table; a table no route matches goes to <db>.<table>",
    "sink.parallelism": "set pipeline.parallelism",
    "sink.partitioner": "partitions always follow Kafka's default (murmur2 of the key)",
    "format": "set key.format and value.format (json)",
    "key.fields-prefix": "key columns keep their names in the key",
    "aliyun.kafka.": "ApsaraMQ options are not supported; authenticate with properties.sasl.*",
}


def option_names(model: type[BaseModel]) -> list[str]:
    """The YAML option names a model accepts, sorted as they are shown to the user."""
    names = [info.alias or name for name, info in model.model_fields.items()]
    if getattr(model, "accepts_properties", False):
        names = [n for n in names if n != "properties"] + [PASS_THROUGH_PREFIX + "*"]
    return sorted(names)


def _foreign_hint(key: str) -> str:
    for option, hint in _FOREIGN_OPTIONS.items():
        if key == option or (option.endswith(".") and key.startswith(option)):
            return f"{hint}. "
    return ""


def unknown_option(
    path: str, key: str, supported: Iterable[str], kind: str = "option"
) -> ConfigProblem:
    """``unknown option 'hostnme'`` with a did-you-mean and the full sorted list."""
    names = sorted(supported)
    close = difflib.get_close_matches(key, names, n=1, cutoff=0.75)
    hint = f"did you mean '{close[0]}'? " if close else _foreign_hint(key)
    return ConfigProblem(
        path, f"unknown {kind} '{key}'", f"{hint}supported {kind}s: {', '.join(names)}"
    )


def render_path(prefix: str, loc: Iterable[str | int]) -> str:
    path = prefix
    for part in loc:
        if isinstance(part, int):
            path += f"[{part}]"
        elif part != "[key]":  # pydantic's marker for "the key of a mapping entry"
            path = f"{path}.{part}" if path else str(part)
    return path


def _field(model: type[BaseModel] | None, key: str | int) -> FieldInfo | None:
    if model is None:
        return None
    for name, info in model.model_fields.items():
        if key in (name, info.alias):
            return info
    return None


def _nested(model: type[BaseModel], loc: tuple[str | int, ...]) -> type[BaseModel]:
    """The model that holds the option at ``loc`` (``jdbc.properties`` in the source...)."""
    for key in loc:
        info = _field(model, key)
        kind = info.annotation if info is not None else None
        if not (isinstance(kind, type) and issubclass(kind, BaseModel)):
            break
        model = kind
    return model


def _example(info: FieldInfo | None) -> str:
    if info is not None and info.examples:
        return str(info.examples[0])
    return "<value>"


def _describe(err: Any, prefix: str, model: type[BaseModel] | None) -> ConfigProblem:
    kind: str = err["type"]
    loc: tuple[str | int, ...] = tuple(err["loc"])
    ctx: dict[str, Any] = err.get("ctx") or {}
    path = render_path(prefix, loc)
    info = _field(model, loc[0]) if loc else None
    option = str(loc[-1]) if loc else prefix
    if kind == "config":
        return ConfigProblem(path, str(ctx["message"]), str(ctx["fix"]))
    if kind == "missing":
        fix = f"add '{option}: {_example(info)}'"
        return ConfigProblem(path, "required option is missing", fix)
    if kind == "extra_forbidden" and model is not None:
        return unknown_option(path, option, option_names(_nested(model, loc[:-1])))
    if kind in ("greater_than_equal", "greater_than", "less_than_equal", "less_than"):
        words = {"greater_than_equal": "at least", "greater_than": "more than",
                 "less_than_equal": "at most", "less_than": "less than"}[kind]
        bound = next(iter(ctx.values()), "?")
        return ConfigProblem(path, f"must be {words} {bound}", f"set a value {words} {bound}")
    if kind == "literal_error":
        return ConfigProblem(path, "is not a supported value", f"use {ctx.get('expected')}")
    message, fix = _TYPE_MESSAGES.get(kind, ("is not a valid value", ""))
    if info is not None and info.description and kind not in _TYPE_MESSAGES:
        fix = f"expected: {info.description}"
    return ConfigProblem(path, message, fix)


def translate(
    exc: ValidationError, prefix: str, model: type[BaseModel] | None = None
) -> list[ConfigProblem]:
    """One :class:`ConfigProblem` per pydantic error, paths prefixed with ``prefix``."""
    return [_describe(err, prefix, model) for err in exc.errors(include_input=False)]
