"""``sasl.jaas.config`` read as the Java Kafka client reads it.

Kafka parses the value with ``java.io.StreamTokenizer`` in its default syntax plus its own
additions (``JaasConfig``, kafka-clients 4.1); this module tokenizes by the same rules, so a
line a Java client accepts gives the same options here, and one it refuses is refused here
(tests/integration/test_jaas_oracle.py holds the two equal):

- characters 0-32 are white space;
- a word starts with a letter, ``_``, ``$``, a character 160-255 or any above 255, and goes
  on over those, digits, ``.`` and ``-``;
- a digit, ``.``, or ``-`` before a digit or ``.``, starts a number (digits with at most one
  ``.``): a token with no text, so a number where a name or value goes is not one;
- ``"`` and ``'`` quote a value up to the same quote or the end of the line, with Java's
  escapes (``\\n`` ``\\t`` ``\\b`` ``\\f`` ``\\r`` ``\\a`` ``\\v``, octal ``\\0``-``\\377``,
  any other escaped character itself);
- ``/`` starts a comment: ``/* ... */``, or to the end of the line from the character after
  the one after the ``/`` (so a ``/`` that ends a line comments out the next);
- every other character (``;``, ``=``, ``@``, ``#``, ``+``, ...) is a token of its own, with no
  text: a password with such characters must be quoted, in Java as here;
- an entry is ``<login module class> <control flag> (<name>=<value>)* ;`` and a client's
  value holds exactly one (Kafka's ``JaasContext``). An option whose name is a number is
  kept by Java under no name, where no login module reads it; it is left out here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

_FLAGS = frozenset({"REQUIRED", "REQUISITE", "SUFFICIENT", "OPTIONAL"})
_ESCAPES = {"a": "\x07", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\x0b"}


class JaasError(ValueError):
    """A value the Java client would refuse too (the message says why, never the value)."""


@dataclass(frozen=True)
class JaasEntry:
    module: str
    flag: str
    options: dict[str, str] = field(repr=False)


def _starts_word(c: str) -> bool:
    o = ord(c)
    return (c.isascii() and (c.isalpha() or c in "_$")) or 160 <= o <= 255 or o > 255


def _in_word(c: str) -> bool:
    return _starts_word(c) or c in "0123456789.-"


class _Tokens:
    """StreamTokenizer's tokens: ``(kind, text)``; kind ``w`` word, ``q`` quoted, ``n`` a
    number (no text), or the character itself for an ordinary one (no text)."""

    def __init__(self, text: str) -> None:
        self.text, self.i = text, 0

    def _skip_line(self) -> None:
        while self.i < len(self.text) and self.text[self.i] not in "\r\n":
            self.i += 1

    def next(self) -> tuple[str, str] | None:
        text = self.text
        while self.i < len(text):
            c = text[self.i]
            if ord(c) <= 32:
                self.i += 1
            elif c == "/":
                if text.startswith("/*", self.i):
                    end = text.find("*/", self.i + 2)
                    self.i = len(text) if end < 0 else end + 2
                else:
                    # "//", or a lone "/": a comment to the line's end, the character after
                    # the "/" skipped first (so a "/" at a line's end takes the next line too)
                    self.i += 2
                    self._skip_line()
            else:
                break
        if self.i >= len(text):
            return None
        c = text[self.i]
        if c in "\"'":
            return "q", self._quoted(c)
        if c in "0123456789.-":
            return self._number()
        if _starts_word(c):
            start = self.i
            while self.i < len(text) and _in_word(text[self.i]):
                self.i += 1
            return "w", text[start:self.i]
        self.i += 1
        return c, ""

    def _number(self) -> tuple[str, str]:
        text = self.text
        if text[self.i] == "-":
            self.i += 1
            if self.i >= len(text) or text[self.i] not in "0123456789.":
                return "-", ""
        dot = False
        while self.i < len(text) and ((text[self.i].isdigit() and text[self.i].isascii())
                                      or (text[self.i] == "." and not dot)):
            dot = dot or text[self.i] == "."
            self.i += 1
        return "n", ""

    def _quoted(self, quote: str) -> str:
        text, out = self.text, []
        self.i += 1
        while self.i < len(text) and text[self.i] not in (quote, "\n", "\r"):
            c = text[self.i]
            self.i += 1
            if c == "\\" and self.i < len(text):
                c, self.i = self._escape(text, self.i)
            out.append(c)
        if self.i < len(text) and text[self.i] == quote:
            self.i += 1
        return "".join(out)

    @staticmethod
    def _escape(text: str, i: int) -> tuple[str, int]:
        c = text[i]
        if "0" <= c <= "7":
            digits, limit = c, 3 if c <= "3" else 2
            i += 1
            while len(digits) < limit and i < len(text) and "0" <= text[i] <= "7":
                digits += text[i]
                i += 1
            return chr(int(digits, 8)), i
        return _ESCAPES.get(c, c), i + 1


def parse_jaas(value: str) -> JaasEntry:
    """The one login module entry of a client's ``sasl.jaas.config``."""
    tokens = _Tokens(value)
    entries: list[JaasEntry] = []
    token = tokens.next()
    while token is not None:
        module = token[1] if token[0] in ("w", "q") else None
        flag = tokens.next()
        if flag is None:
            raise JaasError("the login module's control flag is missing (write: <module> "
                            "required username=\"...\" password=\"...\";)")
        if flag[0] not in ("w", "q") or flag[1].upper() not in _FLAGS:
            raise JaasError(f"the control flag {flag[1]!r} is not one of required, "
                            "requisite, sufficient, optional")
        options: dict[str, str] = {}
        token = tokens.next()
        while token is not None and token[0] != ";":
            name = token[1] if token[0] in ("w", "q") else None
            eq = tokens.next()
            val = tokens.next() if eq is not None and eq[0] == "=" else None
            if val is None or val[0] not in ("w", "q"):
                raise JaasError(f"the option {name or '(not a name)'} has no value (write "
                                'name="value"; quote a value with characters other than '
                                "letters, digits, _ $ . -)")
            if name is not None:
                options[name] = val[1]
            token = tokens.next()
        if token is None:
            raise JaasError("the entry does not end with a semicolon")
        if not module:
            raise JaasError("the login module class is missing")
        entries.append(JaasEntry(module, flag[1].upper(), options))
        token = tokens.next()
    if len(entries) != 1:
        raise JaasError(f"it holds {len(entries)} login modules; a Kafka client takes "
                        "exactly one")
    return entries[0]
