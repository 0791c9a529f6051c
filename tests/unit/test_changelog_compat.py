"""The one compatibility rule within a changelog version (docs/changelog-format.md,
"Versions and compatibility"): a reader that needs a field an older capture did not write
stops, naming the record, the field, what needs it and the fix."""

from __future__ import annotations

import pytest

from cdc_ingest.errors import SinkError
from cdc_ingest.kafka.partition import java_partition
from cdc_ingest.model.changelog import DdlRecord
from cdc_ingest.sink.task.event_resets import _owner
from cdc_ingest.sink.task.layouts import typed_layout

FIX = "run capture and the sink from the same cdc-ingest release"


def test_a_row_without_its_typed_layout_stops_a_sink_that_needs_the_types() -> None:
    with pytest.raises(SinkError) as caught:
        typed_layout({}, "cdc-ingest.p.schema", None, "shop.orders", "0-1-9#3")
    text = str(caught.value)
    assert 'the change of shop.orders at binlog 0-1-9#3 has no "layout"' in text
    assert "include-schema" in text and FIX in text and "new pipeline" in text


def test_a_ddl_record_without_the_keys_stops_the_delete_events() -> None:
    ddl = DdlRecord("shop", "orders", "TRUNCATE orders", "b.1:40", "truncate", None)
    with pytest.raises(SinkError) as caught:
        _owner(ddl, b'{"id":1}', 3, [], frozenset())
    text = str(caught.value)
    assert 'the TRUNCATE record of shop.orders at binlog b.1:40 has no "key"' in text
    assert FIX in text


def test_a_ddl_record_with_its_keys_gives_the_rows_changelog_partition() -> None:
    ddl = DdlRecord("shop", "orders", "TRUNCATE orders", "b.1:40", "truncate", ["id"])
    # the row's changelog key is {"id":N}, partitioned as Kafka's Java client does
    owners = {_owner(ddl, b'{"id":%d,"v":"x"}' % n, 3, [], frozenset()) for n in range(20)}
    assert owners == {java_partition(b'{"id":%d}' % n, 3) for n in range(20)} == {0, 1, 2}
