"""Which MySQL failures pass by themselves (exit 11: `start` tries again) and which do not."""

from __future__ import annotations

import io
import socket
from types import SimpleNamespace
from typing import Any

import pytest

from cdc_ingest.capture import binlog
from cdc_ingest.capture.binlog_errors import BinlogDisconnected, stream_error
from cdc_ingest.capture.socket_reader import SocketReader
from cdc_ingest.errors import TRANSIENT_EXIT_CODE, PositionPurgedError, SourceUnavailable
from cdc_ingest.model import Position
from cdc_ingest.mysql.connection import (
    ConnectionSettings,
    connect,
    retry_delay,
    unavailable,
    went_away,
)
from cdc_ingest.sink.driver.failures import SinkUnavailable, query_failed


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def test_a_server_nobody_answers_for_is_unavailable_not_misconfigured() -> None:
    settings = ConnectionSettings("127.0.0.1", _closed_port(), "cdc", "secret", 2)
    with pytest.raises(SourceUnavailable) as caught:
        connect(settings, retries=0)
    text = str(caught.value)
    assert caught.value.exit_code == TRANSIENT_EXIT_CODE
    assert "1 attempt, connect.max-retries: 0" in text and "secret" not in text, text


def test_retry_delays() -> None:
    assert [retry_delay(n) for n in range(1, 7)] == [1, 2, 4, 8, 10, 10]


@pytest.mark.parametrize(("code", "text"), [
    (1053, "Server shutdown in progress"),
    (1927, "Connection was killed"),
    (4031, "The client was disconnected by the server because of inactivity."),
    (2013, "Lost connection to server during query"),
])
def test_a_server_on_its_way_down_is_unavailable(code: int, text: str) -> None:
    """A query that reaches MySQL while it shuts down fails with 1053: that passes by itself
    (exit 11: `start` restarts capture), it is not an unexpected error (exit 1) that ends
    the pipeline. Seen in the Docker test under `docker compose stop mysql`."""
    assert went_away(Exception(code, text))
    failed = unavailable("a query to MySQL at mysql:3306", Exception(code, text))
    assert failed.exit_code == TRANSIENT_EXIT_CODE and text in str(failed)


def test_a_broken_binlog_stream_is_a_disconnect_a_purged_one_is_not() -> None:
    lost = Exception(2013, "Lost connection to server during query")
    assert isinstance(stream_error(lost, Position(gtid_set="0-1-5"), 7), BinlogDisconnected)
    purged = Exception(1236, "Could not find GTID state requested by slave")
    assert isinstance(stream_error(purged, Position(gtid_set="0-1-5"), 7),
                      PositionPurgedError)


def test_the_library_may_not_reconnect_the_stream_on_its_own(
    monkeypatch: pytest.MonkeyPatch
) -> None:
    """It would resume after the last whole transaction it sent, so the rows of the one
    capture is inside would come twice: the second stream connection is refused."""
    opened: list[dict[str, Any]] = []
    monkeypatch.setattr(binlog, "open_connection", lambda **kw: opened.append(kw) or
                        SimpleNamespace(_rfile=io.BytesIO(), _sock=None))
    replica = binlog.Replica(ConnectionSettings("127.0.0.1", 1, "cdc", "x"), 7, True, 1.0)
    reader = binlog.BinlogReader(replica, Position(gtid_set="0-1-5"), lambda db, t: True,
                                 lambda db, t: (frozenset(), (), False))
    stream = reader._connect(host="h")  # the stream: read through a SocketReader
    assert isinstance(stream._rfile, SocketReader)
    reader._connect(host="h", db="information_schema")  # the library's control connection
    reader._connect(host="h", db="information_schema")
    with pytest.raises(BinlogDisconnected):
        reader._connect(host="h")
    assert len(opened) == 3


@pytest.mark.parametrize(("text", "transient"), [
    ("py4j... cdc_ingest.kafka.errors.TransactionTimedOut: Kafka aborted ...", True),
    ("org.apache.kafka.common.errors.TimeoutException: Timeout of 60000ms expired", True),
    ("cdc_ingest.errors.SinkError: cannot read changelog record ...", False),
    ("cdc_ingest.sink.task.range_read.ChangelogStalledError: changelog t partition 0: no record "
     "of offsets 5..9 arrived for 120 s", True),
    ("cdc_ingest.sink.task.range_read.ChangelogGoneError: changelog t partition 0: offsets from 5 "
     "(this batch reads 5..9) are no longer in Kafka", False),
])
def test_a_sink_query_failure_is_transient_only_for_timeouts(text: str,
                                                             transient: bool) -> None:
    assert isinstance(query_failed(Exception(text)), SinkUnavailable) is transient


def test_a_checkpoint_of_an_earlier_topic_is_named_with_the_fix() -> None:
    text = ("org.apache.spark.sql.kafka010.KafkaIllegalStateException: Some data may have "
            "been lost because they are not available in Kafka any more; ... Reason: "
            "Partition cdc-ingest.p.changelog-0 offset was changed from 16 to 9.")
    error = query_failed(Exception(text), "/state/p/checkpoint")
    assert not isinstance(error, SinkUnavailable)  # starting again would fail the same way
    assert "/state/p/checkpoint holds offsets beyond the end" in str(error)
    assert "delete that checkpoint directory" in str(error)


@pytest.mark.parametrize(("text", "fix"), [
    ("pyspark.errors.exceptions.base.PySparkRuntimeError: [PYTHON_VERSION_MISMATCH] Python in "
     "worker has different version: 3.12 than that in driver: 3.11, PySpark cannot run with "
     "different minor versions.", "a Python of the sink's minor version"),
    ("  File \"<frozen importlib._bootstrap>\"\nModuleNotFoundError: No module named "
     "'cdc_ingest'", "python -m cdc_ingest.sink.runtime.executor_files"),
])
def test_an_executor_python_that_cannot_run_the_tasks_is_named_with_the_fix(
        text: str, fix: str) -> None:
    error = query_failed(Exception(text))
    assert fix in str(error) and not isinstance(error, SinkUnavailable)


@pytest.mark.parametrize(("text", "grant"), [
    # a task's own refusal, pickled through Spark
    ("org.apache.spark.api.python.PythonException: Traceback (most recent call last):\n"
     "cdc_ingest.kafka.errors.KafkaAccessDenied: Kafka failed while initializing transactions: "
     "KafkaError{code=TRANSACTIONAL_ID_AUTHORIZATION_FAILED,val=53}. Kafka refused it to this "
     "principal (ACLs): grant Describe and Write on the pipeline's transactional ids (prefix "
     "<prefix>.); `cdc-ingest acls --config FILE` prints every ACL the pipeline needs",
     "Describe and Write on the pipeline's transactional ids"),
    # Spark's Kafka source (the Java client)
    ("org.apache.spark.SparkException: ... Caused by: "
     "org.apache.kafka.common.errors.TopicAuthorizationException: Not authorized to access "
     "topics: [cdc-ingest.p.changelog]\n\tat org.apache.kafka...",
     "Describe, Read, Write and Create on the topic"),
    ("org.apache.kafka.common.errors.GroupAuthorizationException: Not authorized to access "
     "group: cdc-ingest.p.spark-x", "Describe and Read on the pipeline's groups"),
])
def test_a_sink_refused_by_kafkas_authorizer_exits_14_naming_the_grant(text: str,
                                                                     grant: str) -> None:
    error = query_failed(Exception(text))
    said = str(error)
    assert error.exit_code == 14, said
    assert grant in said and said.count("cdc-ingest acls --config FILE") == 1, said
    assert "cdc-ingest.p" in said or "TRANSACTIONAL_ID" in said, said


@pytest.mark.parametrize("message", [
    "Error: connecting slave requested to start from GTID 0-1-500, which is not in the "
    "master's binlog. Since the master's binlog contains GTIDs with higher sequence numbers",
    "The replication receiver has more GTIDs than the source has, using the source's "
    "SERVER_UUID.",
])
def test_a_server_behind_the_committed_position_is_not_called_purged(message: str) -> None:
    """After a failover to a replica that lacks what capture already has: a stop that says
    the topics hold changes this server lacks, not "purged"."""
    error = stream_error(Exception(1236, message), Position(gtid_set="0-1-500"), 7)
    assert not isinstance(error, (PositionPurgedError, SourceUnavailable))
    assert "lacks transactions capture already captured" in str(error), error
