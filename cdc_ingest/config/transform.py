"""One ``transform:`` rule (Flink CDC's transform block), checked when the file is read.

Expressions are compiled here once so a typo, an unknown function or a key the projection
cannot keep is reported by ``validate`` with its YAML path, not by a sink task later.
"""

from __future__ import annotations

from pydantic import Field, field_validator, model_validator

from cdc_ingest.config.problems import Found, raise_problems
from cdc_ingest.config.source_types import checked_selector, selector
from cdc_ingest.config.types import ConfigModel
from cdc_ingest.transform.parse import ExpressionError
from cdc_ingest.transform.rules import RuleSpec, check_rule, compile_projection

SOFT_DELETE = "SOFT_DELETE"


def _names(text: str | None) -> tuple[str, ...]:
    return tuple(n.strip() for n in (text or "").split(",") if n.strip())


class TransformDef(ConfigModel):
    """A transform rule: which tables, their columns, filter and key."""

    source_table: str = Field(alias="source-table", examples=["app_db.orders"],
                              description="table selector of the tables the rule applies "
                              "to, same syntax as source.tables; a table takes the first "
                              "rule that matches")
    projection: str | None = Field(None, examples=[r"\*, UPPER(name) AS name_upper"],
                                   description="the columns written: `*`, columns, "
                                   "`<expression> AS <name>`, metadata columns "
                                   "(docs/transform.md)")
    filter: str | None = Field(None, examples=["id > 10 AND status <> 'draft'"],
                               description="only rows for which it is TRUE are written")
    primary_keys: str | None = Field(None, alias="primary-keys", examples=["order_id"],
                                     description="the table's key in the sink topics "
                                     "(and the changelog): source columns that contain a "
                                     "unique key of the table")
    partition_keys: str | None = Field(None, alias="partition-keys",
                                       description="no effect: Kafka partitions follow the "
                                       "message key (Flink CDC's Kafka sink ignores it too)")
    table_options: str | None = Field(None, alias="table-options",
                                      description="no effect: Kafka topics have no table "
                                      "options (`key=value,...`; checked)")
    table_options_delimiter: str = Field(",", alias="table-options.delimiter",
                                         description="separator of table-options pairs")
    converter_after_transform: str | None = Field(
        None, alias="converter-after-transform", examples=["SOFT_DELETE"],
        description="`SOFT_DELETE`: a deleted row is written as an insert of the row as it "
        "was (use with `__data_event_type__`)")
    description: str | None = Field(None, description="free text for people")

    @field_validator("source_table")
    @classmethod
    def _selector(cls, value: str) -> str:
        return checked_selector(value, "source-table")

    @model_validator(mode="after")
    def _expressions(self) -> TransformDef:
        found: Found = []
        for option, text in (("projection", self.projection), ("filter", self.filter)):
            if text is not None:
                try:
                    check_rule(RuleSpec("db.t", **{option: text}))  # type: ignore[arg-type]
                except ExpressionError as exc:
                    found.append(((option,), f"cannot be read: {exc}",
                                  "write it as Flink CDC's transform docs do; "
                                  "docs/transform.md lists what is supported"))
        if not found:
            found.extend(self._key_problems())
        converter = self.converter_after_transform
        if converter is not None and converter.strip().upper() != SOFT_DELETE:
            found.append((("converter-after-transform",), "is not a supported converter",
                          f"use {SOFT_DELETE}"))
        if self.table_options:
            pairs = [p for p in self.table_options.split(self.table_options_delimiter)
                     if p.strip()]
            if any("=" not in p for p in pairs):
                found.append((("table-options",), "is not a list of key=value pairs",
                              "write `key1=value1,key2=value2` (or set "
                              "table-options.delimiter)"))
        raise_problems("transform", found)
        return self

    def _key_problems(self) -> Found:
        keys = _names(self.primary_keys)
        if not keys or not self.projection:
            return []
        items = compile_projection(self.projection)
        wildcard = any(name == "*" for name, _, _ in items)
        by_name = {name: (compiled, source) for name, compiled, source in items}
        wrong: list[str] = []
        for key in keys:
            if key in by_name:
                compiled, source = by_name[key]
                if compiled is None and source == key:
                    continue
                what = "computed" if compiled is not None else f"renamed from {source}"
                wrong.append(f"names {key}, which the projection writes {what}")
            elif not wildcard:
                wrong.append(f"names {key}, which the projection does not write")
        if not wrong:
            return []
        return [(("primary-keys",), "; ".join(wrong),
                 "key the table by source columns the projection writes as they are, "
                 "under their own names (capture keys the changelog by them)")]

    @property
    def keys(self) -> tuple[str, ...]:
        return _names(self.primary_keys)

    def spec(self, metadata: tuple[str, ...] = ()) -> RuleSpec:
        """What the sink compiles; ``metadata``: ``source.metadata.list``."""
        return RuleSpec(self.source_table, self.projection, self.filter, self.keys,
                        (self.converter_after_transform or "").strip().upper() == SOFT_DELETE,
                        metadata)

    def matches(self, db: str, table: str) -> bool:
        return selector(self.source_table, "source-table").matches(db, table)
