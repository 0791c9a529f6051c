"""The ready pipelines in routes/: each parses and routes example tables where it says."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from cdc_ingest.commands.demo import ROUTE
from cdc_ingest.config import DeliveryGuarantee, StartupMode, load_pipeline

ROUTES_DIR = Path(__file__).resolve().parents[2] / "routes"
LIBRARY = sorted(ROUTES_DIR.glob("*.yaml"))

# file -> ((db, table), topics) examples
EXPECTED_TOPICS: dict[str, list[tuple[tuple[str, str], tuple[str, ...]]]] = {
    "shop-to-kafka.yaml": [
        (("app", "order_17"), ("orders",)),
        (("shop", "customers"), ("shop.customers",)),
    ],
    "mirror-with-prefix.yaml": [
        (("inventory", "stock"), ("ods.stock",)),
        (("billing_3", "invoices"), ("billing.invoice",)),
        (("billing_12", "payment"), ("billing.payment",)),
    ],
    "shop-demo.yaml": [
        (("shop", "orders"), ("shop.orders.v1",)),
        (("shop", "customers"), ("shop.customers",)),
    ],
    "shop-demo-avro.yaml": [
        (("shop", "orders"), ("shop-avro.orders.v1",)),
        (("shop", "customers"), ("shop-avro.customers",)),
    ],
    "merge-shards.yaml": [
        (("app", "order_7"), ("orders",)),
        (("app", "order_0"), ("orders",)),
        (("app", "order_123"), ("orders",)),
    ],
    "migrate-database.yaml": [
        (("legacy", "users"), ("migration.users",)),
        (("legacy", "order_items"), ("migration.order_items",)),
    ],
}

_REQUIRED_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_.]*)\}")


def fake_environment(text: str) -> dict[str, str]:
    """A value for every ${VAR} without a default; ${VAR:-d} keeps its default."""
    return {name: f"fake-{name.lower()}" for name in _REQUIRED_VAR.findall(text)}


def test_every_file_has_routing_examples() -> None:
    missing = {p.name for p in LIBRARY} - set(EXPECTED_TOPICS)
    assert not missing, f"add example tables and topics for {sorted(missing)} to EXPECTED_TOPICS"


@pytest.mark.parametrize("path", LIBRARY, ids=lambda p: p.name)
def test_parses_with_its_variables(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    defn = load_pipeline(path, fake_environment(text))
    assert defn.pipeline.name == path.stem
    assert "fake-mysql_password" not in repr(defn)
    # The defaults of ${VAR:-d} are used when the environment does not set them.
    assert defn.sink.properties["bootstrap.servers"] == "localhost:9092"


# Written before the library had a header convention; they name other commands.
_OLDER_HEADERS = {"shop-to-kafka.yaml", "mirror-with-prefix.yaml"}


@pytest.mark.parametrize("path", LIBRARY, ids=lambda p: p.name)
def test_starts_with_how_to_run_it(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    assert text.startswith(f"# {path.stem}:")
    header = text.split("\nsource:", 1)[0]
    assert f"--config routes/{path.name}" in header
    if path.name not in _OLDER_HEADERS:
        assert f"cdc-ingest validate --config routes/{path.name}" in header
        assert f"cdc-ingest start --config routes/{path.name}" in header


@pytest.mark.parametrize("path", LIBRARY, ids=lambda p: p.name)
def test_routes_send_tables_to_the_expected_topics(path: Path) -> None:
    text = path.read_text(encoding="utf-8")
    defn = load_pipeline(path, fake_environment(text))
    router = defn.router()
    for (db, table), topics in EXPECTED_TOPICS[path.name]:
        assert defn.source.captures(db, table), f"{db}.{table} is not captured"
        assert router.sink_topics(db, table) == topics, f"{db}.{table}"


def test_merge_shards_marks_the_source_table() -> None:
    path = ROUTES_DIR / "merge-shards.yaml"
    defn = load_pipeline(path, fake_environment(path.read_text(encoding="utf-8")))
    assert defn.sink.sink_add_table_id_to_header_enabled
    assert not defn.source.captures("app", "orders_archive")


def test_migrate_database_is_a_whole_database_exactly_once_snapshot() -> None:
    path = ROUTES_DIR / "migrate-database.yaml"
    text = path.read_text(encoding="utf-8")
    defn = load_pipeline(path, fake_environment(text))
    assert defn.source.scan_startup_mode is StartupMode.INITIAL
    assert defn.sink.sink_delivery_guarantee is DeliveryGuarantee.EXACTLY_ONCE
    assert defn.source.captures("legacy", "anything")
    assert not defn.source.captures("other", "users")
    assert defn.source.server_id.size >= (defn.source.scan_incremental_snapshot_parallelism or 1)
    for step in ("cdc-ingest status", "lag 0", "cdc-ingest verify", "exits 0",
                 "Stop the writes", "Switch"):
        assert step in text, step


def test_environment_overrides_the_defaults() -> None:
    path = ROUTES_DIR / "merge-shards.yaml"
    env = {**fake_environment(path.read_text(encoding="utf-8")),
           "KAFKA_BOOTSTRAP_SERVERS": "k1:9092,k2:9092", "MYSQL_PORT": "3307"}
    defn = load_pipeline(path, env)
    assert defn.sink.properties["bootstrap.servers"] == "k1:9092,k2:9092"
    assert defn.source.port == 3307


def test_the_demo_runs_the_library_file() -> None:
    """`cdc-ingest demo` starts the pipeline of routes/shop-demo.yaml (its path broke once
    when the module moved)."""
    assert ROUTE == ROUTES_DIR / "shop-demo.yaml" and ROUTE.is_file()
