"""Every exit code of ``cdc-ingest``, in one table: the errors, the CLI and the docs read it.

The errors (:mod:`cdc_ingest.errors` and the others' ``exit_code``) and the CLI use the named
constants below; docs/operations.md's "Exit codes" table is rendered from :data:`TABLE`
(between the markers :data:`BEGIN` and :data:`END`), and a unit test fails when it differs::

    python -m cdc_ingest.exit_codes --write docs/operations.md
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

OK = 0
UNEXPECTED = 1
CONFIG = 2
SOURCE = 3
VALIDATE_FAILED = 4
KAFKA_OR_SINK = 5
FENCED = 6
POSITION_PURGED = 7
VERIFY_DIFFERENT = 8
CHILD_FAILED = 9
SCHEMA_CHANGE_STOPPED = 10
# A failure that passes by itself: nothing uncommitted is kept, so starting again resumes
# exactly; ``cdc-ingest start`` does that itself, with backoff.
TRANSIENT = 11
NOT_CAUGHT_UP = 12
CUTOVER_REFUSED = 13
KAFKA_DENIED = 14
SIGNAL_REFUSED = 15
SIGNAL_NOT_TAKEN = 16
INTERRUPTED = 130


@dataclass(frozen=True)
class ExitCode:
    code: int
    name: str
    meaning: str
    commands: str  # which commands exit with it


_START9 = "(`start`: 9)"
_READERS = "`status`, `verify`, `cutover`, `watch`, `snapshot`"
TABLE: tuple[ExitCode, ...] = (
    ExitCode(OK, "OK", "done, or stopped cleanly: `capture`, `sink`, `start` and `demo` by "
             "SIGTERM or Ctrl-C (also a stop that arrives while they are still starting), "
             "`watch` by Ctrl-C", "all"),
    ExitCode(UNEXPECTED, "UNEXPECTED", "an error cdc-ingest did not expect (a bug: it prints "
             "the traceback), or `demo` could not finish (its message says where to look)",
             "all"),
    ExitCode(CONFIG, "CONFIG", "the pipeline file is wrong (every problem is listed with its "
             "YAML path and fix), the command line is (an unknown option, a missing "
             "`--config`), or `snapshot` was given a table the pipeline does not capture",
             "all"),
    ExitCode(SOURCE, "SOURCE", "MySQL: the login refused, a setting or grant missing, a type "
             "it cannot read, a server behind capture's position",
             f"`capture`, {_READERS} {_START9}"),
    ExitCode(VALIDATE_FAILED, "VALIDATE_FAILED", "at least one check failed (each `[FAIL]` "
             "line says which and how to fix it; the messages are those of the "
             "troubleshooting table below, whose codes are the ones the other commands exit "
             "with)", "`validate`"),
    ExitCode(KAFKA_OR_SINK, "KAFKA_OR_SINK", "Kafka refused or failed a request, or the Spark "
             "stage failed", f"`capture`, `sink`, {_READERS} {_START9}"),
    ExitCode(FENCED, "FENCED", "another instance of this pipeline took over (fenced)",
             f"`capture`, `sink` {_START9}"),
    ExitCode(POSITION_PURGED, "POSITION_PURGED", "the committed binlog position is purged "
             "from the server", f"`capture`, `status` {_START9}"),
    ExitCode(VERIFY_DIFFERENT, "VERIFY_DIFFERENT", "the topics differ from MySQL",
             "`verify`, `cutover`"),
    ExitCode(CHILD_FAILED, "CHILD_FAILED", "capture or the sink failed for good (its own error "
             "is above), so `start` stopped the other", "`start`"),
    ExitCode(SCHEMA_CHANGE_STOPPED, "SCHEMA_CHANGE_STOPPED", "capture stopped at a schema "
             "change it must not follow by itself", f"`capture` {_START9}"),
    ExitCode(TRANSIENT, "TRANSIENT", "a failure that passes by itself: MySQL unreachable "
             "(past `connect.max-retries` for `capture`, `verify`, `watch`; at once for `status` "
             "and `snapshot`), a "
             "transaction Kafka timed out (the process was frozen)",
             f"`capture`, `sink`, {_READERS} (`start` restarts the stage with backoff)"),
    ExitCode(NOT_CAUGHT_UP, "NOT_CAUGHT_UP", "`--wait-caught-up SECONDS` ran out before "
             "capture was at the binlog head and the sink had written all it committed; "
             "`cutover`: the pipeline did not reach the final position within `--timeout`",
             "`status`, `cutover`"),
    ExitCode(CUTOVER_REFUSED, "CUTOVER_REFUSED", "MySQL takes writes (`read_only` is OFF and "
             "no `--last-write` was named), the last write named is not in the binlog, or "
             "MySQL changed a captured table after the final position while `cutover` "
             "checked", "`cutover`"),
    ExitCode(KAFKA_DENIED, "KAFKA_DENIED", "Kafka's authorizer refused the principal a topic, "
             "group or transactional id (the message names the ACL to grant; `cdc-ingest "
             "acls` prints them all)", "every command that talks to Kafka (`start`: 9)"),
    ExitCode(SIGNAL_REFUSED, "SIGNAL_REFUSED", "capture read the request and refused it (the "
             "reason is printed; capture goes on)",
             "`snapshot`, `stop-snapshot`, `pause-snapshot`, `resume-snapshot`, `set-position`, "
             "`verify --repair`"),
    ExitCode(SIGNAL_NOT_TAKEN, "SIGNAL_NOT_TAKEN", "no capture took the request within "
             "`--wait` seconds (none runs, or it is busy with an unfinished snapshot): it stays "
             "in the signal topic, and a capture takes it when it can",
             "`snapshot`, `stop-snapshot`, `pause-snapshot`, `resume-snapshot`, `set-position`"),
    ExitCode(INTERRUPTED, "INTERRUPTED", "Ctrl-C (SIGINT) stopped a command before it "
             "finished (`capture`, `sink`, `start`, `demo`, and `watch` once it follows its "
             "topics, stop cleanly with 0 instead)",
             "`validate`, `status`, `verify`, `cutover`, `snapshot`, `watch`"),
)

BEGIN = ("<!-- exit codes: generated from cdc_ingest/exit_codes.py by "
         "`python -m cdc_ingest.exit_codes --write docs/operations.md`; edit the table there -->")
END = "<!-- end of exit codes -->"


def meaning(code: int) -> str:
    return next(e.meaning for e in TABLE if e.code == code)


def render_table() -> str:
    """The Markdown table of :data:`TABLE`, markers included."""
    rows = [BEGIN, "", "| code | name | meaning | commands |", "|---|---|---|---|"]
    rows += [f"| {e.code} | `{e.name}` | {e.meaning} | {e.commands} |" for e in TABLE]
    return "\n".join([*rows, "", END])


def replace_block(text: str) -> str:
    """``text`` (a Markdown document) with its marked block rendered anew."""
    start, end = text.index(BEGIN), text.index(END) + len(END)
    return text[:start] + render_table() + text[end:]


def main(argv: list[str]) -> int:
    if argv[:1] == ["--write"] and len(argv) == 2:
        path = Path(argv[1])
        path.write_text(replace_block(path.read_text(encoding="utf-8")), encoding="utf-8")
        return 0
    sys.stdout.write(render_table() + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
