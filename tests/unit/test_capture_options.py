"""Pipeline definition -> capture options: names, startup, and no secrets in repr."""

import pytest

from cdc_ingest.capture.options import capture_options
from cdc_ingest.config import parse_pipeline

YAML = """
source:
  type: mysql
  hostname: db
  username: cdc
  password: ${PW}
  tables: shop.\\.*
  server-id: 5401
  scan.startup.mode: {mode}
sink:
  type: upsert-kafka
  properties.bootstrap.servers: k:9092
  properties.sasl.password: ${KPW}
pipeline:
  name: shop
  parallelism: 3
"""

ENV = {"PW": "s3cret-mysql", "KPW": "s3cret-kafka"}


def test_options_follow_the_definition_and_hide_secrets() -> None:
    options = capture_options(parse_pipeline(YAML.replace("{mode}", "latest-offset"), ENV))
    assert options.transactional_id == "cdc-ingest.shop.capture"
    assert (options.changelog_topic, options.offsets_topic) == (
        "cdc-ingest.shop.changelog", "cdc-ingest.shop.offsets")
    assert options.partitions == 3 and options.server_id == 5401
    assert options.captured("shop", "orders") and not options.captured("app", "orders")
    assert options.kafka["sasl.password"] == "s3cret-kafka"  # the client gets it
    text = repr(options)
    assert "s3cret" not in text and "s3cret" not in str(options.connection)


@pytest.mark.parametrize("mode", ["initial", "snapshot"])
def test_snapshot_modes_read_chunks_with_the_next_server_id(mode: str) -> None:
    options = capture_options(parse_pipeline(YAML.replace("{mode}", mode), ENV))
    assert options.startup.mode == mode
    assert options.snapshot_server_id == 5402 and options.chunk_size == 8096


def test_default_startup_mode_is_initial() -> None:
    text = YAML.replace("  scan.startup.mode: {mode}\n", "")
    assert capture_options(parse_pipeline(text, ENV)).startup.mode == "initial"


class _Catalog:
    """The two facts added_tables asks of the server."""

    def __init__(self, tables: list[tuple[str, str]]) -> None:
        self._tables = tables

    def tables(self) -> list[tuple[str, str]]:
        return self._tables

    def server_identity(self) -> str:
        return "server_id=1"


def _options(tables: str, newly: bool = True) -> object:
    text = YAML.replace("{mode}", "initial").replace("shop.\\\\.*", tables)
    if newly:
        text = text.replace("  server-id: 5401", "  server-id: 5401\n"
                            "  scan.newly-added-table.enabled: true")
    return capture_options(parse_pipeline(text, ENV))


def test_tables_added_between_runs_are_snapshotted_first(
        monkeypatch: pytest.MonkeyPatch) -> None:
    from types import SimpleNamespace  # noqa: PLC0415

    from cdc_ingest.capture import resume  # noqa: PLC0415
    from cdc_ingest.capture.resume import added_tables  # noqa: PLC0415
    from cdc_ingest.capture.snapshot.state import SnapshotState  # noqa: PLC0415
    from cdc_ingest.errors import ConfigError  # noqa: PLC0415
    from cdc_ingest.model import Position  # noqa: PLC0415

    known: set[tuple[str, str]] = set()  # the tables the schema topic knows
    monkeypatch.setattr(resume, "read_schema_topic",
                        lambda kafka, topic: SimpleNamespace(tables=known))
    catalog = _Catalog([("shop", "a"), ("shop", "b"), ("shop", "c"), ("app", "x")])
    committed = Position(gtid_set="0-1-5", file="b.1", pos=4, tables=["shop.a,shop.c", None])
    options = _options(r"shop.\.*")
    start = added_tables(options, committed, catalog)  # type: ignore[arg-type]
    state = SnapshotState.from_json(start.snapshot or {})
    assert state.tables == [["shop", "b"]] and not state.done  # a and c were captured
    assert state.resets == []
    # b captured before and taken out: its keys go before its snapshot rows
    known.add(("shop", "b"))
    again = SnapshotState.from_json(added_tables(options, committed, catalog).snapshot or {})  # type: ignore[arg-type]
    assert again.tables == [["shop", "b"]] and again.resets == [["shop", "b"]]
    known.clear()
    assert start.tables == [r"shop.\.*", None] and (start.file, start.pos) == ("b.1", 4)
    # the same selection: nothing to read; a position from before the selection was kept
    assert added_tables(options, start, catalog).snapshot == start.snapshot  # type: ignore[arg-type]
    old = Position(gtid_set="0-1-5")
    assert added_tables(options, old, catalog).snapshot is None  # type: ignore[arg-type]
    # an unfinished snapshot gets the added tables after its own
    running = Position(file="b.1", pos=4, tables=["shop.a", None],
                       snapshot=SnapshotState([["shop", "a"]], server="server_id=1").as_json())
    merged = SnapshotState.from_json(
        added_tables(options, running, catalog).snapshot or {})  # type: ignore[arg-type]
    assert merged.tables == [["shop", "a"], ["shop", "b"], ["shop", "c"]]
    # without the option, the start stops naming the tables and the fix
    with pytest.raises(ConfigError, match=r"now also selects shop\.b") as caught:
        added_tables(_options(r"shop.\.*", newly=False), committed, catalog)  # type: ignore[arg-type]
    assert "scan.newly-added-table.enabled: true" in caught.value.problems[0].fix


def test_an_old_position_warns_of_tables_its_pipeline_never_wrote(
        caplog: pytest.LogCaptureFixture) -> None:
    from cdc_ingest.capture.resume import unseen_tables  # noqa: PLC0415

    catalog = _Catalog([("shop", "a"), ("shop", "b"), ("app", "x")])
    with caplog.at_level("WARNING"):
        unseen = unseen_tables(_options(r"shop.\.*"), catalog,  # type: ignore[arg-type]
                               {("shop", "a"), ("app", "x")})
    assert unseen == [("shop", "b")]
    assert "cdc-ingest snapshot --config <file> shop.b" in caplog.text


def test_heartbeat_interval_zero_disables_heartbeats() -> None:
    # documented as in Flink CDC; it was clamped to 0.1 s: a commit of the position alone
    # every 100 ms while other tables' transactions move the binlog
    import math  # noqa: PLC0415

    from cdc_ingest.capture.positions import PositionStore  # noqa: PLC0415
    from cdc_ingest.capture.transaction import ChangelogTransaction, Limits  # noqa: PLC0415
    from cdc_ingest.model import Position  # noqa: PLC0415

    text = YAML.replace("{mode}", "latest-offset").replace(
        "  server-id: 5401", "  server-id: 5401\n  heartbeat.interval: {hb}")
    assert capture_options(parse_pipeline(text.replace("{hb}", "0"), ENV)).heartbeat_s == math.inf
    assert capture_options(parse_pipeline(text.replace("{hb}", "10s"), ENV)).heartbeat_s == 10
    assert capture_options(parse_pipeline(text.replace("{hb}", "1ms"), ENV)).heartbeat_s == 0.1

    class Producer:
        calls = 0

        def __getattr__(self, name: str) -> object:
            def call(*args: object, **kwargs: object) -> None:
                Producer.calls += 1
            return call

    tx = ChangelogTransaction(Producer(), PositionStore({}, "offsets"),  # type: ignore[arg-type]
                              "changelog", "schema", "notes", Limits(10, 60.0, math.inf))
    tx.start_run(Position(file="b.1", pos=4))
    tx.position = Position(file="b.1", pos=900)  # the binlog moved, nothing captured
    tx.maybe_commit()
    assert Producer.calls == 0
