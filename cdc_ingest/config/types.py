"""Value types shared by the definitions: choices, names, and the masked Kafka properties."""

from __future__ import annotations

import difflib
import re
from enum import Enum
from typing import Annotated, Any, NoReturn, TypeVar

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict

from cdc_ingest.config.problems import problem

E = TypeVar("E", bound=Enum)
K = TypeVar("K")
V = TypeVar("V")

_TOPIC = re.compile(r"[A-Za-z0-9._-]{1,249}")
_SAFE_ID = re.compile(r"[A-Za-z0-9._-]{1,200}")
_SECRET_MARKERS = ("password", "secret", "jaas", "token", "credential", "key.pem", "keystore.key",
                   "user.info", "user-info")


class ConfigModel(BaseModel):
    """Base of every definition: frozen, unknown options rejected, YAML names as aliases."""

    # Numbers become text where text is expected: YAML reads `password: 123456` and
    # `sink-table: 2024` as integers, and Flink CDC accepts both.
    model_config = ConfigDict(
        frozen=True, extra="forbid", populate_by_name=True, coerce_numbers_to_str=True
    )


def _normal(text: str) -> str:
    return text.strip().lower().replace("_", "-")


def choice(enum: type[E]) -> BeforeValidator:
    """Accept an enum value in any case, with ``_`` or ``-`` (Flink matches enums that way)."""
    values = [str(member.value) for member in enum]

    def parse(value: Any) -> E:
        if isinstance(value, enum):
            return value
        if isinstance(value, str):
            for member in enum:
                if _normal(str(member.value)) == _normal(value):
                    return member
            close = difflib.get_close_matches(value, values, n=1, cutoff=0.6)
            if close:
                raise problem("is not a supported value",
                              f"did you mean '{close[0]}'? supported: {', '.join(values)}")
        raise problem("is not a supported value", f"use one of: {', '.join(values)}")

    return BeforeValidator(parse)


def _invalid_name(what: str, fix: str) -> NoReturn:
    raise problem(f"is not a valid {what}", fix)


def _topic(value: str) -> str:
    if not _TOPIC.fullmatch(value) or value in (".", ".."):
        _invalid_name("Kafka topic name", "use 1-249 letters, digits, '.', '_' or '-'")
    return value


def slug(text: str) -> str:
    """A safe id made from free text, offered in fixes: ``MySQL to Kafka`` -> ``mysql-to-kafka``."""
    return re.sub(r"[^a-z0-9._-]+", "-", text.lower()).strip("-") or "cdc-ingest"


def is_safe_id(value: str) -> bool:
    return bool(_SAFE_ID.fullmatch(value))


def _safe_id(value: str) -> str:
    if not _SAFE_ID.fullmatch(value):
        # A pipeline name is not a secret, so the fix may show a corrected spelling of it.
        _invalid_name("name", f"use only letters, digits, '.', '_' or '-', e.g. '{slug(value)}'")
    return value


KafkaTopic = Annotated[str, AfterValidator(_topic)]
SafeId = Annotated[str, AfterValidator(_safe_id)]


def is_secret_property(key: str) -> bool:
    """Kafka client settings whose values must never be shown (``sasl.password``...)."""
    lowered = key.lower()
    return any(marker in lowered for marker in _SECRET_MARKERS)


class FrozenDict(dict[K, V]):
    """A read-only dict: definitions are frozen, and this keeps them hashable and picklable."""

    def _read_only(self, *args: Any, **kwargs: Any) -> NoReturn:
        raise TypeError("pipeline definitions are read-only; copy with dict(...) to change")

    __setitem__ = __delitem__ = __ior__ = _read_only
    clear = pop = popitem = setdefault = update = _read_only

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple(sorted(self.items(), key=repr)))

    def __reduce__(self) -> tuple[Any, tuple[dict[K, V]]]:
        # Pickle (Spark closures, multiprocessing) would otherwise refill it via __setitem__.
        return (type(self), (dict(self),))


class MaskedDict(FrozenDict[str, str]):
    """Kafka client properties with secret values masked in ``repr`` and ``str``.

    Still a dict for everything that reads it (``confluent_kafka.Producer(props)`` works), but a
    log line or a traceback that prints it cannot leak a password.
    """

    def __repr__(self) -> str:
        shown = {k: "**********" if is_secret_property(k) else v for k, v in self.items()}
        return repr(shown)

    __str__ = __repr__
