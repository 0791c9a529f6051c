"""The project's errors, grouped by what the operator does next.

Every error carries a message that says what happened, where (YAML path, table, column,
binlog position) and what to do about it. The CLI catches :class:`CdcIngestError` at its edge,
prints the message and exits with the error's ``exit_code`` (named in
:mod:`cdc_ingest.exit_codes`); tracebacks only with ``--debug``.
"""

from __future__ import annotations

from dataclasses import dataclass

from cdc_ingest import exit_codes


class CdcIngestError(Exception):
    """Root of every error cdc-ingest raises on purpose."""

    exit_code = exit_codes.UNEXPECTED


@dataclass(frozen=True)
class ConfigProblem:
    """One problem in a pipeline definition: where it is and how to fix it."""

    path: str
    message: str
    fix: str = ""

    def __str__(self) -> str:
        text = f"{self.path}: {self.message}"
        return f"{text} (fix: {self.fix})" if self.fix else text


class ConfigError(CdcIngestError):
    """The pipeline definition is wrong. Fix the YAML and run again."""

    exit_code = exit_codes.CONFIG

    def __init__(self, problems: list[ConfigProblem] | ConfigProblem | str) -> None:
        if isinstance(problems, str):
            problems = [ConfigProblem("<config>", problems)]
        elif isinstance(problems, ConfigProblem):
            problems = [problems]
        self.problems = list(problems)
        lines = [f"  - {p}" for p in self.problems]
        count = len(self.problems)
        super().__init__(
            f"the pipeline definition has {count} problem{'s' if count != 1 else ''}:\n"
            + "\n".join(lines)
        )


class SourceError(CdcIngestError):
    """MySQL is misconfigured, refused something, or sent something we cannot represent."""

    exit_code = exit_codes.SOURCE


# The exit code of a failure that passes by itself: MySQL or Kafka unreachable for a while, a
# Kafka transaction the broker aborted after transaction.timeout.ms. Nothing uncommitted is
# kept, so starting again resumes exactly; ``cdc-ingest start`` does that itself, with backoff.
TRANSIENT_EXIT_CODE = exit_codes.TRANSIENT


class SourceUnavailable(SourceError):
    """MySQL could not be reached (down, restarting, failing over, network) within
    ``connect.max-retries``; starting again resumes from the committed position."""

    exit_code = TRANSIENT_EXIT_CODE


class SinkError(CdcIngestError):
    """The Spark sink stage failed (its query, a task, a changelog record it cannot read);
    nothing of the failed batch was committed. Kafka's own failures are
    :class:`cdc_ingest.kafka.KafkaClientError` (same exit code) and
    :class:`cdc_ingest.kafka.FencedError` (exit code 6)."""

    exit_code = exit_codes.KAFKA_OR_SINK


# What to do when capture's position is gone from the server's binlog (capture, status, start).
PURGED_FIX = (
    "start a new pipeline (a new pipeline.name) with scan.startup.mode: initial (a fresh "
    "snapshot) or latest-offset (changes made meanwhile are missed), and raise "
    "binlog_expire_logs_seconds"
)


class SchemaChangeStopped(SourceError):
    """Capture stopped at a schema change it must not follow by itself (a captured table's
    key changed, or ``pipeline.schema.change.behavior: exception``); starting again stops
    at the same change."""

    exit_code = exit_codes.SCHEMA_CHANGE_STOPPED


class PositionPurgedError(SourceError):
    """The position to resume from is no longer in the server's binlog."""

    exit_code = exit_codes.POSITION_PURGED
