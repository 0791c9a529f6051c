"""``cdc-ingest set-position``: capture goes on from a binlog position you choose, back or
forward (capture/set_position.py says what the sink topics show afterwards)."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Any

import orjson

from cdc_ingest.capture.signal_format import SET_POSITION
from cdc_ingest.commands.snapshot import signal_and_wait
from cdc_ingest.config import PipelineDef
from cdc_ingest.errors import ConfigError, ConfigProblem
from cdc_ingest.kafka.signals import send_one

FIX = "give --gtid SET, or --binlog FILE:POS (SHOW BINARY LOGS / SHOW BINLOG EVENTS list them)"


def binlog_option(text: str) -> tuple[str, int]:
    """``FILE:POS`` -> (file, pos); a ConfigError naming the option when it is not that."""
    file, colon, pos = text.rpartition(":")
    if not colon or not file or not pos.isdigit() or int(pos) < 4:
        raise ConfigError([ConfigProblem("--binlog", f"{text!r} is not FILE:POS (a position "
                                         "of 4 or more)", FIX)])
    return file, int(pos)


def request_set_position(defn: PipelineDef, gtid_set: str | None, binlog: str | None,
                         echo: Callable[[str], None], wait_s: float = 0.0) -> str:
    """Write the signal, then wait for capture's answer as ``cdc-ingest snapshot`` does."""
    if (gtid_set is None) == (binlog is None):
        raise ConfigError([ConfigProblem("--gtid / --binlog", "name exactly one position",
                                         FIX)])
    at: dict[str, Any]
    if binlog is not None:
        file, pos = binlog_option(binlog)
        at, shown = {"binlog_filename": file, "binlog_position": pos}, f"{file}:{pos}"
    else:
        assert gtid_set is not None
        at, shown = {"gtid_set": gtid_set}, f"GTID set {gtid_set}"

    def send(kafka: dict[str, Any]) -> tuple[str, str]:
        signal_id = uuid.uuid4().hex[:12]
        send_one(kafka, defn.signal_topic, signal_id.encode(),
                 orjson.dumps({"type": SET_POSITION, "id": signal_id, **at}))
        return signal_id, (
            f"set-position to {shown} requested (request {signal_id}). The running capture "
            "takes it within a few seconds, once any snapshot is done (if none runs, the next "
            "start does): going back writes the changes from there again, going forward skips "
            "the changes in between (`cdc-ingest verify` then finds what they left behind)")

    return signal_and_wait(defn, send, echo, wait_s, "goes on from")
