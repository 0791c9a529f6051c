"""Read the YAML text: syntax errors with line and column, duplicate options refused.

PyYAML keeps the last of two equal keys silently; in a pipeline file that hides a mistake
(two ``port:`` lines), so duplicates are problems here.
"""

from __future__ import annotations

from typing import Any

import yaml
from yaml.nodes import MappingNode

from cdc_ingest.errors import ConfigError, ConfigProblem


class _StrictLoader(yaml.SafeLoader):
    """A SafeLoader that records duplicate mapping keys instead of overwriting."""

    def __init__(self, stream: str) -> None:
        super().__init__(stream)
        self.duplicates: list[ConfigProblem] = []

    def construct_mapping(self, node: MappingNode, deep: bool = False) -> dict[Any, Any]:
        first_line: dict[Any, int] = {}
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            line = key_node.start_mark.line + 1
            if key in first_line:
                self.duplicates.append(ConfigProblem(
                    f"line {line}",
                    f"the option '{key}' appears twice (first at line {first_line[key]})",
                    "keep one of them",
                ))
            else:
                first_line[key] = line
        return super().construct_mapping(node, deep=deep)


_StrictLoader.add_constructor(
    yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _StrictLoader.construct_mapping
)


def _syntax_problem(exc: yaml.YAMLError, source_name: str) -> ConfigProblem:
    mark = getattr(exc, "problem_mark", None)
    where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
    # Only the parser's own words: str(exc) would quote the offending line, maybe a password.
    what = " ".join(
        str(part) for part in (getattr(exc, "context", None), getattr(exc, "problem", None))
        if part
    )
    return ConfigProblem(
        source_name,
        f"YAML syntax error{where}: {what or 'cannot parse'}",
        "check the indentation, the ':' after each option and that quotes are closed",
    )


def load_yaml(text: str, source_name: str) -> Any:
    """The parsed document; raises :class:`ConfigError` for syntax errors and duplicates."""
    loader = _StrictLoader(text)
    try:
        data = loader.get_single_data()
    except yaml.YAMLError as exc:
        raise ConfigError([_syntax_problem(exc, source_name)]) from None
    finally:
        loader.dispose()
    if loader.duplicates:
        raise ConfigError(loader.duplicates)
    return data
