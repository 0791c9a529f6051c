"""Verify results as plain text: per topic the counts, then the first differences of each kind."""

from __future__ import annotations

from collections.abc import Iterator

from cdc_ingest.verify.diff import CATEGORIES, TopicResult


def topic_lines(result: TopicResult) -> Iterator[str]:
    yield f"topic {result.topic} <- {', '.join(result.tables)}"
    per_table = ""
    if len(result.rows) > 1:
        per_table = " (" + ", ".join(f"{t}: {n}" for t, n in result.rows.items()) + ")"
    keys = f"{result.topic_keys}" if result.topic_exists else "0 (topic does not exist)"
    verdict = "equal" if result.ok else "DIFFERENT"
    yield f"  MySQL rows {result.mysql_rows}{per_table}, topic keys {keys}: {verdict}"
    for problem in result.problems:
        yield f"  not verified: {problem}"
    if result.soft_deleted:
        yield (f"  {result.soft_deleted} key(s) of rows MySQL no longer has, kept by "
               "converter-after-transform: SOFT_DELETE (not a difference)")
    for note in result.notes:
        yield f"  {note}"
    if result.unconfirmed:
        yield (f"  unconfirmed {len(result.unconfirmed)}: keys written again while verify read "
               "them, neither equal nor confirmed different; run verify again")
        for sample in result.unconfirmed[:10]:
            source = f" ({sample.table})" if sample.table else ""
            yield f"  unconfirmed  {sample.key}{source}: {sample.detail}"
    if not any(result.counts.values()):
        return
    yield "  " + ", ".join(f"{c} {result.counts[c]}" for c in CATEGORIES)
    width = max(len(c) for c in CATEGORIES)
    for category in CATEGORIES:
        samples = result.samples[category]
        for sample in samples:
            source = f" ({sample.table})" if sample.table else ""
            yield f"  {category:<{width}}  {sample.key}{source}: {sample.detail}"
        more = result.counts[category] - len(samples)
        if more > 0:
            yield f"  {'':<{width}}  ... and {more} more {category}"


def summary_line(results: list[TopicResult]) -> str:
    bad = [r for r in results if not r.ok]
    rows = sum(r.mysql_rows for r in results)
    tables = len({t for r in results for t in r.tables})
    if not bad:
        return (f"verify: {len(results)} topic(s) from {tables} table(s) equal to MySQL "
                f"({rows} rows)")
    totals = ", ".join(f"{sum(r.counts[c] for r in results)} {c}" for c in CATEGORIES)
    unverified = sum(len(r.problems) for r in results)
    extra = f", {unverified} table(s) not verified" if unverified else ""
    return (f"verify: {len(bad)} of {len(results)} topic(s) differ from MySQL "
            f"({totals}{extra})")
