"""``${VAR}``, ``${VAR:-default}`` and ``${file:/run/secrets/name}`` in YAML string values.

Interpolation runs on the parsed YAML, value by value, so a substituted value can never
change the document's structure and every problem is reported at its YAML path. ``$${...}``
is a literal ``${...}``. Problems name the variable or file, never a value.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from cdc_ingest.errors import ConfigProblem

# $${...} (escaped) | ${...} | a "${" that is never closed
_REFERENCE = re.compile(r"\$(\$?)\{([^}]*)\}|(\$\{)")
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")
_FILE = "file:"


def child_path(path: str, key: Any) -> str:
    if isinstance(key, int):
        return f"{path}[{key}]"
    return f"{path}.{key}" if path else str(key)


# options whose value is a secret: a default for them would be a secret in the file
_SECRET_WORDS = ("password", "secret", "token", "sasl.jaas", "key", "user-info", "user.info")


@dataclass
class Interpolator:
    """Resolves references in a YAML tree; collects problems instead of stopping at one."""

    environ: Mapping[str, str]
    base_dir: Path
    problems: list[ConfigProblem] = field(default_factory=list)
    failed_paths: set[str] = field(default_factory=set)

    def resolve(self, node: Any, path: str = "") -> Any:
        if isinstance(node, dict):
            return {k: self.resolve(v, child_path(path, k)) for k, v in node.items()}
        if isinstance(node, list):
            return [self.resolve(v, child_path(path, i)) for i, v in enumerate(node)]
        if isinstance(node, str) and "${" in node:
            return _REFERENCE.sub(lambda m: self._replace(m, path), node)
        return node

    def _replace(self, match: re.Match[str], path: str) -> str:
        escaped, expression, unterminated = match.groups()
        if unterminated:
            return self._fail(path, "has a '${' without a closing '}'",
                              "close the reference: ${NAME}; write $${ for a literal ${",
                              match.group(0))
        if escaped:
            return "${" + expression + "}"
        if expression.startswith(_FILE):
            return self._read_file(expression[len(_FILE):].strip(), path, match.group(0))
        return self._variable(expression, path, match.group(0))

    def _variable(self, expression: str, path: str, original: str) -> str:
        name, has_default, default = expression.partition(":-")
        name = name.strip()
        if not _NAME.fullmatch(name):
            return self._fail(path, f"has a malformed reference '{original}'",
                              "write ${NAME}, ${NAME:-default} or ${file:/path}", original)
        value = self.environ.get(name)
        if value is None or (has_default and value == ""):
            if has_default:
                return default
            secret = any(word in path.lower() for word in _SECRET_WORDS)
            fix = (f"set {name} in the environment (export {name}=...), or read the secret "
                   "from a file with ${file:/run/secrets/<name>}" if secret else
                   f"set {name} in the environment, or write ${{{name}:-default}}")
            return self._fail(path, f"uses the environment variable '{name}', which is not set",
                              fix, original)
        return value

    def _read_file(self, name: str, path: str, original: str) -> str:
        file = Path(name)
        if not file.is_absolute():
            file = self.base_dir / file
        try:
            # Secret files usually end in a newline that is not part of the secret.
            return file.read_text(encoding="utf-8").rstrip("\r\n")
        except (OSError, UnicodeDecodeError) as exc:
            reason = getattr(exc, "strerror", None) or "not UTF-8 text"
            return self._fail(path, f"reads the secret file '{file}', which cannot be read "
                              f"({reason})", "create the file or correct the path", original)

    def _fail(self, path: str, message: str, fix: str, original: str) -> str:
        self.problems.append(ConfigProblem(path, message, fix))
        self.failed_paths.add(path)
        return original  # keep the text so later checks do not also call the option missing
