"""Flink CDC transform expressions (a SQL subset) -> a small tree of tuples.

The grammar is the part of Calcite's SQL that Flink CDC's transform docs list: literals,
column and metadata names, arithmetic, ``||``, comparisons, ``IS [NOT] NULL/TRUE/FALSE``,
``[NOT] BETWEEN``, ``[NOT] IN``, ``[NOT] LIKE [ESCAPE]``, ``AND``/``OR``/``NOT``, ``CASE``,
``CAST``, ``EXTRACT``, ``POSITION(a IN b)``, ``SUBSTRING(s FROM a FOR b)`` and function calls.
Nodes are tuples whose first item says what they are (see :mod:`.evaluate`).
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

from cdc_ingest.transform.lexer import COMPARISONS, METADATA, ExpressionError, tokens

Node = tuple[Any, ...]


class Parser:
    """Recursive descent over :func:`tokens`; precedence low to high: OR, AND, NOT,
    comparisons, ``+ -``, ``* / % ||``, unary minus."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.toks = tokens(text)
        self.at = 0

    # -- token helpers --------------------------------------------------------------------

    def peek(self, ahead: int = 0) -> tuple[str, str]:
        return self.toks[min(self.at + ahead, len(self.toks) - 1)]

    def take(self) -> tuple[str, str]:
        tok = self.toks[self.at]
        self.at += 1
        return tok

    def accept(self, kind: str, word: str) -> bool:
        if self.peek() == (kind, word):
            self.at += 1
            return True
        return False

    def expect(self, kind: str, word: str) -> None:
        if not self.accept(kind, word):
            raise self.error(f"expected {word!r}")

    def error(self, what: str) -> ExpressionError:
        kind, word = self.peek()
        found = "the end" if kind == "end" else repr(word)
        text = " ".join(self.text.split())  # as written, on one line (no repr escapes)
        return ExpressionError(f"{what}, found {found} in `{text}`")

    def at_end(self) -> bool:
        return self.peek()[0] == "end"

    # -- grammar --------------------------------------------------------------------------

    def expression(self) -> Node:
        left = self.conjunction()
        while self.accept("kw", "OR"):
            left = ("or", left, self.conjunction())
        return left

    def conjunction(self) -> Node:
        left = self.negation()
        while self.accept("kw", "AND"):
            left = ("and", left, self.negation())
        return left

    def negation(self) -> Node:
        if self.accept("kw", "NOT"):
            return ("not", self.negation())
        return self.comparison()

    def comparison(self) -> Node:
        left = self.additive()
        kind, word = self.peek()
        if kind == "op" and word in COMPARISONS:
            self.take()
            return ("cmp", COMPARISONS[word], left, self.additive())
        if self.accept("kw", "IS"):
            negate = self.accept("kw", "NOT")
            if self.accept("kw", "DISTINCT"):
                self.expect("kw", "FROM")
                return ("distinct", left, self.additive(), negate)
            for word in ("NULL", "TRUE", "FALSE", "UNKNOWN"):
                if self.accept("kw", word):
                    return ("is", word, left, negate)
            raise self.error("expected NULL, TRUE, FALSE, UNKNOWN or DISTINCT FROM after IS")
        negate = self.accept("kw", "NOT")
        if self.accept("kw", "BETWEEN"):
            self.accept("kw", "ASYMMETRIC")
            low = self.additive()
            self.expect("kw", "AND")
            return ("between", left, low, self.additive(), negate)
        if self.accept("kw", "IN"):
            self.expect("op", "(")
            items = [self.expression()]
            while self.accept("op", ","):
                items.append(self.expression())
            self.expect("op", ")")
            return ("in", left, tuple(items), negate)
        if self.accept("kw", "LIKE"):
            pattern = self.additive()
            escape = self.additive() if self.accept("kw", "ESCAPE") else None
            return ("like", left, pattern, escape, negate)
        if negate:
            raise self.error("expected BETWEEN, IN or LIKE after NOT")
        return left

    def additive(self) -> Node:
        left = self.multiplicative()
        while self.peek() in (("op", "+"), ("op", "-")):
            left = ("arith", self.take()[1], left, self.multiplicative())
        return left

    def multiplicative(self) -> Node:
        left = self.unary()
        while self.peek() in (("op", "*"), ("op", "/"), ("op", "%"), ("op", "||")):
            op = self.take()[1]
            right = self.unary()
            left = ("call", "CONCAT", (left, right)) if op == "||" else ("arith", op, left, right)
        return left

    def unary(self) -> Node:
        if self.accept("op", "-"):
            return ("neg", self.unary())
        if self.accept("op", "+"):
            return self.unary()
        return self.primary()

    def primary(self) -> Node:
        kind, word = self.take()
        if kind == "number":
            return ("lit", int(word) if word.isdigit() else Decimal(word))
        if kind == "string":
            return ("lit", word)
        if kind == "op" and word == "(":
            inner = self.expression()
            self.expect("op", ")")
            return inner
        if kind == "kw":
            return self.keyword(word)
        if kind == "quoted":
            return ("col", word)
        if kind == "name":
            if self.peek() == ("op", "("):
                self.take()
                return self.call(word.upper())
            return ("meta", word) if word in METADATA else ("col", word)
        self.at -= 1
        raise self.error("expected a value, a column or a function")

    def keyword(self, word: str) -> Node:
        if word in ("NULL", "TRUE", "FALSE"):
            return ("lit", {"NULL": None, "TRUE": True, "FALSE": False}[word])
        if word == "CASE":
            return self.case()
        if word == "CAST":
            self.expect("op", "(")
            value = self.expression()
            self.expect("kw", "AS")
            target = self.type_name()
            self.expect("op", ")")
            return ("cast", value, target)
        self.at -= 1
        raise self.error("expected a value, a column or a function")

    def type_name(self) -> tuple[str, tuple[int, ...]]:
        kind, word = self.take()
        if kind != "name":
            self.at -= 1
            raise self.error("expected a type name")
        args: list[int] = []
        if self.accept("op", "("):
            while True:
                kind, number = self.take()
                if kind != "number" or not number.isdigit():
                    self.at -= 1
                    raise self.error("expected a number in the type's parentheses")
                args.append(int(number))
                if not self.accept("op", ","):
                    break
            self.expect("op", ")")
        return word.upper(), tuple(args)

    def case(self) -> Node:
        operand = None if self.peek() == ("kw", "WHEN") else self.expression()
        whens: list[tuple[Node, Node]] = []
        while self.accept("kw", "WHEN"):
            test = self.expression()
            self.expect("kw", "THEN")
            whens.append((test, self.expression()))
        if not whens:
            raise self.error("expected WHEN in CASE")
        default = self.expression() if self.accept("kw", "ELSE") else ("lit", None)
        self.expect("kw", "END")
        return ("case", operand, tuple(whens), default)

    def call(self, name: str) -> Node:
        args: list[Node] = []
        if name == "EXTRACT":
            unit = self.take()[1].upper()
            self.expect("kw", "FROM")
            args = [("lit", unit), self.expression()]
        elif name == "POSITION":
            needle = self.additive()
            self.expect("kw", "IN")
            args = [needle, self.expression()]
            if self.accept("kw", "FROM"):
                args.append(self.expression())
        elif self.peek() != ("op", ")"):
            args.append(self.expression())
            if name in ("SUBSTRING", "SUBSTR") and self.accept("kw", "FROM"):
                args.append(self.expression())
                if self.accept("kw", "FOR"):
                    args.append(self.expression())
            while self.accept("op", ","):
                args.append(self.expression())
        self.expect("op", ")")
        return ("call", name, tuple(args))


def parse_expression(text: str) -> Node:
    """One expression (a filter, or one computed column)."""
    parser = Parser(text)
    node = parser.expression()
    if not parser.at_end():
        raise parser.error("expected the end of the expression")
    return node


def parse_projection(text: str) -> list[tuple[str, Node | None]]:
    """A projection: (output name, expression) per item; ``("*", None)`` for the wildcard.
    An item without ``AS`` that is not a plain column needs a name."""
    parser = Parser(text)
    items: list[tuple[str, Node | None]] = []
    while True:
        if parser.peek() == ("op", "*") and parser.peek(1)[0] in ("end", "op") and \
                parser.peek(1)[1] in ("", ","):
            parser.take()
            items.append(("*", None))
        else:
            node = parser.expression()
            if parser.accept("kw", "AS") or parser.peek()[0] in ("name", "quoted"):
                kind, alias = parser.take()
                if kind not in ("name", "quoted"):
                    parser.at -= 1
                    raise parser.error("expected a column name after AS")
            elif node[0] in ("col", "meta"):
                alias = node[1]
            else:
                raise parser.error("a computed column needs a name (`<expression> AS <name>`)")
            if alias in METADATA:
                raise ExpressionError(f"{alias} is a metadata column's name; a projected "
                                      "column cannot take it")
            items.append((alias, node))
        if parser.at_end():
            return items
        parser.expect("op", ",")
