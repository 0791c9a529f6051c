"""Exit codes: one table in cdc_ingest/exit_codes.py; docs/operations.md shows it as rendered,
every error class exits with a code from it, and the CLI exits with each code a user can meet
without MySQL or Kafka running (the CLI as a subprocess, or its ``main`` in this process)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from cdc_ingest import cli, exit_codes
from cdc_ingest.commands import status as status_cmd
from cdc_ingest.commands import supervisor
from cdc_ingest.errors import (
    CdcIngestError,
    ConfigError,
    PositionPurgedError,
    SchemaChangeStopped,
    SinkError,
    SourceError,
    SourceUnavailable,
)
from cdc_ingest.kafka.errors import FencedError, KafkaClientError, TransactionTimedOut
from cdc_ingest.sink.driver.failures import SinkUnavailable
from cdc_ingest.verify.run import VerifyMismatch

DOC = Path(__file__).resolve().parents[2] / "docs" / "operations.md"


def test_the_docs_table_is_the_code_table() -> None:
    text = DOC.read_text(encoding="utf-8")
    assert text.count(exit_codes.BEGIN) == 1 and text.count(exit_codes.END) == 1
    assert exit_codes.replace_block(text) == text, (
        "docs/operations.md's exit codes differ from cdc_ingest/exit_codes.py: run "
        "python -m cdc_ingest.exit_codes --write docs/operations.md")
    assert "| 11 | `TRANSIENT` |" in text and "| 3 | `SOURCE` |" in text


def test_regenerating_rewrites_a_stale_block_only(tmp_path: Path) -> None:
    doc = tmp_path / "ops.md"
    doc.write_text(f"# Ops\n\n{exit_codes.BEGIN}\n| 3 | unreachable |\n{exit_codes.END}\n\nmore\n")
    assert exit_codes.main(["--write", str(doc)]) == 0
    assert doc.read_text() == f"# Ops\n\n{exit_codes.render_table()}\n\nmore\n"


def test_codes_and_names_are_unique() -> None:
    codes = [e.code for e in exit_codes.TABLE]
    assert len(set(codes)) == len(codes) and codes == sorted(codes)
    assert len({e.name for e in exit_codes.TABLE}) == len(codes)
    for entry in exit_codes.TABLE:  # the constant of that name holds that code
        assert getattr(exit_codes, entry.name) == entry.code


@pytest.mark.parametrize(("error", "code"), [
    (CdcIngestError, 1), (ConfigError, 2), (SourceError, 3), (SinkError, 5),
    (KafkaClientError, 5), (FencedError, 6), (PositionPurgedError, 7), (VerifyMismatch, 8),
    (supervisor.ChildFailed, 9), (SchemaChangeStopped, 10), (SourceUnavailable, 11),
    (TransactionTimedOut, 11), (SinkUnavailable, 11),
], ids=lambda v: getattr(v, "__name__", str(v)))
def test_each_error_exits_with_a_code_of_the_table(error: type[CdcIngestError],
                                                   code: int) -> None:
    assert error.exit_code == code
    assert code in {e.code for e in exit_codes.TABLE}


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cdc_ingest.cli", *args],
                          capture_output=True, text=True, timeout=120, check=False)


@pytest.fixture
def unreachable(tmp_path: Path) -> Path:
    """A valid pipeline whose MySQL (port 1) and Kafka (port 2) refuse connections."""
    doc = {
        "source": {"type": "mysql", "hostname": "127.0.0.1", "port": 1, "username": "cdc",
                   "password": "x", "tables": "shop.orders", "server-id": 5401,
                   "connect.max-retries": 0},
        "sink": {"type": "upsert-kafka", "properties.bootstrap.servers": "127.0.0.1:2"},
        "pipeline": {"name": "exit-codes", "state.dir": str(tmp_path / "state")},
    }
    path = tmp_path / "pipeline.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def test_help_exits_0_and_a_usage_error_2() -> None:
    assert _run("status", "--help").returncode == exit_codes.OK
    missing = _run("status")
    assert missing.returncode == exit_codes.CONFIG == 2
    assert "Missing option '--config'" in missing.stderr


def test_a_wrong_pipeline_file_exits_2(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("source: {type: mysql}\nsink: {type: upsert-kafka}\n")
    for command in ("validate", "capture", "start", "status"):
        done = _run(command, "--config", str(bad))
        assert done.returncode == 2, (command, done.stderr)
        assert "the pipeline definition has" in done.stderr and "source.hostname" in done.stderr


@pytest.mark.parametrize("command", ["capture", "verify", "cutover", "watch", "snapshot"])
def test_mysql_unreachable_exits_11(unreachable: Path, command: str) -> None:
    extra = ["shop.orders"] if command == "snapshot" else []
    done = _run(command, "--config", str(unreachable), *extra)
    assert done.returncode == exit_codes.TRANSIENT == 11, done.stderr
    assert "error: cannot connect to MySQL at 127.0.0.1:1 as 'cdc'" in done.stderr
    assert "Traceback" not in done.stderr


def test_validate_with_failed_checks_exits_4(unreachable: Path) -> None:
    done = _run("validate", "--config", str(unreachable))
    assert done.returncode == exit_codes.VALIDATE_FAILED == 4, done.stdout + done.stderr
    assert "[FAIL] mysql reachable: cannot connect to MySQL" in done.stdout
    assert "validate: 2 of 2 checks failed" in done.stdout


def _main(*args: str) -> int:
    with pytest.raises(SystemExit) as exited:
        cli.main(list(args))
    return int(exited.value.code or 0)


class _NoPosition:
    def __init__(self, *args: object) -> None:
        self.table_totals: dict[str, dict[str, int]] = {}

    def load(self) -> None:
        return None


def test_status_exits_11_when_mysql_is_unreachable(
        unreachable: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    # Kafka answers with nothing committed (stand-ins); MySQL is really unreachable.
    monkeypatch.setattr(status_cmd, "PositionStore", _NoPosition)
    monkeypatch.setattr(status_cmd, "_requests_waiting", lambda *a: 0)
    monkeypatch.setattr(status_cmd, "sink_status",
                        lambda defn, kafka: status_cmd.SinkStatus("changelog", "group"))
    assert _main("status", "--config", str(unreachable), "--json") == 11
    out = capsys.readouterr().out
    assert '"exit_code": 11' in out and "cannot connect to MySQL at 127.0.0.1:1" in out


def test_status_exits_12_when_not_caught_up_in_time(
        unreachable: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    behind = status_cmd.PipelineStatus(
        "exit-codes", status_cmd.CaptureStatus(), status_cmd.SinkStatus("changelog", "group"))
    monkeypatch.setattr(status_cmd, "pipeline_status", lambda defn: behind)
    assert _main("status", "--config", str(unreachable), "--wait-caught-up", "0") == 12
    assert "not caught up after 0 s" in capsys.readouterr().err


@pytest.mark.parametrize("error", [
    SourceError("login refused"), KafkaClientError("broker gone"), FencedError("taken over"),
    PositionPurgedError("purged"), VerifyMismatch("differ"), SchemaChangeStopped("key"),
    SourceUnavailable("away"),
], ids=lambda e: type(e).__name__)
def test_main_exits_with_the_code_of_the_error_and_prints_it(
        unreachable: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str], error: CdcIngestError) -> None:
    def fails(*args: object) -> bool:
        raise error

    monkeypatch.setattr("cdc_ingest.commands.validate.run_validate", fails)
    assert _main("validate", "--config", str(unreachable)) == error.exit_code
    assert capsys.readouterr().err == f"error: {error}\n"


def test_ctrl_c_in_a_short_command_exits_130(
        unreachable: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def interrupted(*args: object) -> bool:
        raise KeyboardInterrupt

    monkeypatch.setattr("cdc_ingest.commands.validate.run_validate", interrupted)
    assert _main("validate", "--config", str(unreachable)) == exit_codes.INTERRUPTED == 130


def test_status_help_names_the_codes_of_the_table() -> None:
    text = " ".join(_run("status", "--help").stdout.split())
    assert "7 when the committed position is gone from the binlog" in text
    assert "3 when MySQL refuses the login, 11 when it is unreachable, 5 when Kafka fails" \
        in text
    assert "12 when --wait-caught-up ran out; 0 otherwise" in text
