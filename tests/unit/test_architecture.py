"""The architecture as a test: which part may import which (docs/architecture.md).

Parses every module's imports (top level and inside functions) without importing anything,
and fails naming the module and the import that crosses a line.
"""

from __future__ import annotations

import ast
from collections import deque
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "cdc_ingest"

STAGES = ("capture", "sink", "verify")
PARTS = ("mysql", "kafka", "model", "config", "routing")


def _module(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _import_nodes(path: Path) -> list[tuple[str, list[str]]]:
    """Every import statement of ``path`` (top level and inside functions) as (module, names):
    ``import a.b`` is ``("a.b", [])``, ``from a.b import c, d`` is ``("a.b", ["c", "d"])``,
    relative imports resolved."""
    tree = ast.parse(path.read_text(), str(path))
    package = _module(path) if path.name == "__init__.py" else _module(path).rpartition(".")[0]
    found: list[tuple[str, list[str]]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(alias.name, []) for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*anchor, base] if base else anchor)
            found.append((base, [alias.name for alias in node.names]))
    return found


def _imports(path: Path) -> set[str]:
    """Every module ``path`` imports, absolute, relative imports resolved (and, for ``from a
    import b``, both ``a`` and ``a.b``: the rules match either)."""
    found: set[str] = set()
    for base, names in _import_nodes(path):
        found.add(base)
        found.update(f"{base}.{name}" for name in names)
    return found


PATHS = {_module(p): p for p in sorted(PACKAGE.rglob("*.py"))}
MODULES = {module: _imports(path) for module, path in PATHS.items()}


def _part(module: str) -> str:
    """``cdc_ingest.capture.snapshot.reader`` -> ``capture``; top-level modules by name."""
    return module.split(".")[1] if module.count(".") else ""


def _hits(importer: str, prefixes: tuple[str, ...]) -> list[str]:
    return sorted(name for name in MODULES[importer]
                  if any(name == p or name.startswith(p + ".") for p in prefixes))


def _crossings(allowed: object, forbidden: tuple[str, ...]) -> list[str]:
    out = []
    for module in MODULES:
        if callable(allowed) and allowed(module):
            continue
        out += [f"{module} imports {name}" for name in _hits(module, forbidden)]
    return out


def _ours_but(*kept: str) -> tuple[str, ...]:
    """Every top-level module and package of ours except ``kept``."""
    names = {p.stem for p in PACKAGE.iterdir()
             if (p.is_dir() and p.name != "__pycache__") or p.suffix == ".py"}
    return tuple(sorted(f"cdc_ingest.{n}" for n in names - {"__init__", *kept}))


RULES: dict[str, tuple[object, tuple[str, ...]]] = {
    # rule: (who may, what)
    "nothing imports the CLI (it imports the stages)":
        (lambda m: m == "cdc_ingest.cli", ("cdc_ingest.cli",)),
    "no stage or part imports a command":
        (lambda m: _part(m) not in (*STAGES, *PARTS), ("cdc_ingest.commands",)),
    "capture does not import the sink":
        (lambda m: _part(m) != "capture", ("cdc_ingest.sink",)),
    "the sink does not import capture":
        (lambda m: _part(m) != "sink", ("cdc_ingest.capture",)),
    "capture does not import verify":
        (lambda m: _part(m) != "capture", ("cdc_ingest.verify",)),
    "verify does not import capture":
        (lambda m: _part(m) != "verify", ("cdc_ingest.capture",)),
    # verify is a second, independent implementation of what the sink writes: it shares the
    # contracts (model/, formats/), never the sink's code
    "verify does not import the sink":
        (lambda m: _part(m) != "verify", ("cdc_ingest.sink",)),
    "the sink does not import verify":
        (lambda m: _part(m) != "sink", ("cdc_ingest.verify",)),
    "formats/ does no I/O: it imports no stage, no command, no client and no configuration":
        (lambda m: _part(m) != "formats",
         (*(f"cdc_ingest.{p}" for p in (*STAGES, "commands", "services", "kafka", "mysql",
                                        "registry", "config", "transactions")),
          "confluent_kafka", "pymysql", "pyspark", "socket", "urllib", "http", "requests")),
    "a sink task knows neither the driver nor the runtime (it runs in either process)":
        (lambda m: not m.startswith("cdc_ingest.sink.task"),
         ("cdc_ingest.sink.driver", "cdc_ingest.sink.runtime")),
    "the sink's runtime knows neither the driver nor the task":
        (lambda m: not m.startswith("cdc_ingest.sink.runtime"),
         ("cdc_ingest.sink.driver", "cdc_ingest.sink.task")),
    "confluent_kafka only inside kafka/":
        (lambda m: _part(m) == "kafka", ("confluent_kafka",)),
    "pymysqlreplication only in capture/binlog.py and capture/binlog_*.py":
        (lambda m: m == "cdc_ingest.capture.binlog" or m.startswith("cdc_ingest.capture.binlog_"),
         ("pymysqlreplication",)),
    "pyspark only inside sink/":
        (lambda m: _part(m) == "sink", ("pyspark",)),
    "pymysql only in mysql/, the binlog reader, the commands and the dev services":
        (lambda m: _part(m) in ("mysql", "commands", "services")
         or m == "cdc_ingest.capture.binlog" or m.startswith("cdc_ingest.capture.binlog_"),
         ("pymysql",)),
    "the dev services are no stage's or part's dependency":
        (lambda m: _part(m) not in (*STAGES, *PARTS), ("cdc_ingest.services",)),
    "model/ is plain data: it imports nothing else of ours":
        (lambda m: _part(m) != "model", tuple(f"cdc_ingest.{p}" for p in
                                              (*STAGES, "mysql", "kafka", "config",
                                               "routing", "commands", "services"))),
    # the consumer API a user installs next to their code: the record formats and Kafka only
    # (reading a pipeline file's topics is commands/pipeline_reader.py's)
    "transactions/ imports only model/, kafka/, errors and itself":
        (lambda m: _part(m) != "transactions",
         _ours_but("model", "kafka", "errors", "transactions")),
    "kafka/ and mysql/ know no stage":
        (lambda m: _part(m) not in ("kafka", "mysql"),
         tuple(f"cdc_ingest.{p}" for p in (*STAGES, "commands"))),
}


@pytest.mark.parametrize("rule", sorted(RULES))
def test_imports_follow_the_architecture(rule: str) -> None:
    allowed, forbidden = RULES[rule]
    assert _crossings(allowed, forbidden) == [], rule


def test_the_import_scan_sees_imports() -> None:
    # a parser that found nothing would pass every rule above
    assert "confluent_kafka" in MODULES["cdc_ingest.kafka.producer"]
    assert "pymysqlreplication" in MODULES["cdc_ingest.capture.binlog"]
    assert "cdc_ingest.model.changelog.decode_record" in MODULES["cdc_ingest.formats.upsert_json"]
    assert _crossings(lambda m: False, ("confluent_kafka",)), "the scan missed kafka/"
    others = _ours_but("model", "kafka", "errors", "transactions")
    assert {"cdc_ingest.config", "cdc_ingest.verify", "cdc_ingest.mysql", "cdc_ingest.sink",
            "cdc_ingest.formats", "cdc_ingest.metrics"} <= set(others)
    assert not {"cdc_ingest.model", "cdc_ingest.kafka", "cdc_ingest.errors"} & set(others)


def _imported_modules(module: str) -> set[str]:
    """The modules of ours that ``module`` imports. ``from a.b import c`` imports the module
    ``a.b.c`` when there is one, else a name of ``a.b``. The parent packages that run first
    are not counted: a package's ``__init__`` importing its own ``pkg.x`` is no cycle; ``pkg.x``
    importing a name ``pkg/__init__`` re-exports is one."""
    found = set()
    for base, names in _import_nodes(PATHS[module]):
        if not names:
            found.add(base)
        for name in names:
            found.add(f"{base}.{name}" if f"{base}.{name}" in PATHS else base)
    return (found & PATHS.keys()) - {module}


def _cycles(graph: dict[str, set[str]]) -> list[str]:
    """The import cycles of ``graph`` as module chains (``a -> b -> a``): for each module on
    one, the shortest cycle through it, each cycle once."""
    found: set[tuple[str, ...]] = set()
    for start in sorted(graph):
        came_from: dict[str, str] = {}
        queue = deque([start])
        while queue:
            module = queue.popleft()
            if start in graph.get(module, ()):
                chain = [module]
                while chain[-1] != start:
                    chain.append(came_from[chain[-1]])
                chain.reverse()
                first = chain.index(min(chain))
                found.add(tuple(chain[first:] + chain[:first]))
                break
            for imported in sorted(graph.get(module, ())):
                if imported not in came_from and imported != start:
                    came_from[imported] = module
                    queue.append(imported)
    return [" -> ".join((*cycle, cycle[0])) for cycle in sorted(found)]


def test_no_import_cycles() -> None:
    # deferred imports (inside functions) and TYPE_CHECKING ones count: a cycle they hold
    # together is one module's code living in another
    graph = {module: _imported_modules(module) for module in PATHS}
    assert _cycles(graph) == []


def test_the_cycle_scan_sees_cycles_and_resolves_imports() -> None:
    assert _cycles({"a": {"b"}, "b": {"c", "a"}, "c": {"b"}, "d": {"a"}}) == [
        "a -> b -> a", "b -> c -> b"]
    # ``from cdc_ingest.capture import values as binlog_values``: the module, not the package
    decoder = _imported_modules("cdc_ingest.capture.decoder")
    assert "cdc_ingest.capture.values" in decoder
    assert "cdc_ingest.capture" not in decoder
    # a name re-exported by a package's __init__ is an import of the __init__
    assert "cdc_ingest.kafka" in _imported_modules("cdc_ingest.sink.transaction")
    # imports inside functions count
    assert "cdc_ingest.sink.task.columns" in _imported_modules("cdc_ingest.sink.driver.startup")


def test_modules_stay_small() -> None:
    sizes = {m: len(p.read_text().splitlines()) for m, p in PATHS.items()}
    assert {m: n for m, n in sizes.items() if n > 300} == {}


_PRODUCER_CALLS = {"init", "begin", "commit", "abort", "send", "raw_produce", "produce"}


def _producer_uses(path: Path) -> list[str]:
    """Calls of a producer's methods in ``path``: ``<something>producer.<method>``."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Attribute) and node.attr in _PRODUCER_CALLS:
            owner = node.value
            name = (owner.attr if isinstance(owner, ast.Attribute)
                    else owner.id if isinstance(owner, ast.Name) else "")
            if "producer" in name.lower():
                found.append(f"{_module(path)}:{node.lineno} {name}.{node.attr}")
    return found


def test_capture_has_one_writer_of_its_kafka_transactions() -> None:
    # rows, markers, schema records and the position all go through ChangelogTransaction
    uses = [use for path in sorted((PACKAGE / "capture").rglob("*.py"))
            if path.name != "transaction.py" for use in _producer_uses(path)]
    assert uses == []
    assert _producer_uses(PACKAGE / "capture" / "transaction.py"), "the scan found nothing"


def test_the_sink_has_one_writer_of_its_kafka_transactions() -> None:
    # the tasks' writers, the head start and the transaction metadata's BEGIN/END writer all
    # go through SinkTransaction (transactional producers have "init"/"begin"; a plain
    # producer's send, for at-least-once, is not a transaction)
    uses = [use for path in sorted((PACKAGE / "sink").rglob("*.py"))
            if path.name != "transaction.py" for use in _producer_uses(path)
            if use.rsplit(".", 1)[1] in {"init", "begin", "commit", "abort"}]
    assert uses == []
    assert _producer_uses(PACKAGE / "sink" / "transaction.py"), "the scan found nothing"
    assert not [m for m, imported in MODULES.items() if m.startswith("cdc_ingest.sink.")
                and m != "cdc_ingest.sink.transaction"
                and "cdc_ingest.kafka.TransactionalProducer" in imported]


def test_no_folder_of_the_sink_holds_more_than_twelve_modules() -> None:
    sizes = {str(d.relative_to(PACKAGE)): len([p for p in d.glob("*.py")
                                               if p.name != "__init__.py"])
             for d in [PACKAGE / "sink", *(PACKAGE / "sink").rglob("*/")]
             if d.is_dir() and d.name != "__pycache__"}
    assert len(sizes) >= 4, sizes  # sink/ and its rooms
    assert {d: n for d, n in sizes.items() if n > 12} == {}
