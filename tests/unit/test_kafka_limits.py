"""Message size limits from max_allowed_packet, and the error that names an oversized row."""

from __future__ import annotations

from cdc_ingest.kafka.limits import CEILING, FLOOR, MessageTooLarge, message_limit
from cdc_ingest.model.changelog import row_value


def test_the_limit_holds_a_row_twice_in_json_within_librdkafkas_bounds() -> None:
    assert message_limit(0) == FLOOR
    assert message_limit(64 << 20) == 3 * (64 << 20) + FLOOR
    assert message_limit(1 << 30) == CEILING


def test_an_oversized_changelog_record_names_table_key_position_size_and_fix() -> None:
    value = row_value("+U", "shop", "notes", {"id": 7}, {"id": 7, "b": "x" * 1000},
                      {"id": 7, "b": "y" * 1000}, 0, "0-1-42#3")
    err = MessageTooLarge("cl", b'{"id":7}', value, "Broker: Message size too large")
    text = str(err)
    assert "a row of shop.notes at binlog 0-1-42#3 (key {\"id\":7})" in text
    assert f"is a {len(value) + 8:,} byte message for topic cl" in text
    assert "--add-config max.message.bytes=N" in text
    assert err.exit_code == 5


def test_an_oversized_sink_message_names_the_table_of_its_headers() -> None:
    headers = [("namespace", b"mysql"), ("schemaName", b"shop"), ("tableName", b"orders")]
    err = MessageTooLarge("orders", b'{"id":1}', b"{}" * 10, "too large", headers)
    assert str(err).startswith("a row of shop.orders (key {\"id\":1}) is a 28 byte message")
    unnamed = MessageTooLarge("orders", b'{"id":1}', b"{}" * 10, "too large")
    assert str(unnamed).startswith("a row of an unknown table (key")
