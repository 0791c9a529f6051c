"""``sasl.jaas.config`` read by cdc-ingest (kafka/jaas.py) exactly as the Java Kafka client
reads it: the oracle is Kafka's own ``JaasContext.loadClientContext`` (kafka-clients 4.1.1,
the broker's jars), run on the same values, hand-picked edge cases and random ones. Both must
accept the same values with the same module, control flag and options, and refuse the same.
"""

from __future__ import annotations

import base64
import random
import subprocess
from pathlib import Path

from cdc_ingest.kafka.jaas import JaasError, parse_jaas
from cdc_ingest.services.kafka import fetch_jars

ORACLE = Path(__file__).parent / "java" / "JaasOracle.java"
PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"

CASES = [
    f'{PLAIN} required username="alice" password="s3cret";',
    f"{PLAIN} required username='alice' password='it''s';",
    f'{PLAIN} REQUIRED username=alice password=p@ss-w0rd.$;',
    f'{PLAIN} Optional username="a\\"b\\\\c" password="\\n\\t\\101\\0\\477\\q";',
    f'{PLAIN} required username="multi\nline" password="x";',
    f'{PLAIN} required /* a comment */ username="a" // rest of line\n password="b";',
    f'{PLAIN} required username=a/b password="c";',
    f'{PLAIN} required username="é✓🔑" password=ünïcödé✓;',
    f'{PLAIN} required username="a" password="b"',
    f'{PLAIN} required username="a" password="b"; {PLAIN} required username="c";',
    f'{PLAIN} username="a";',
    f'{PLAIN} maybe username="a";',
    f'{PLAIN} required username= ;',
    f'{PLAIN} required username;',
    f'{PLAIN} required username="a"password="b";',
    f"{PLAIN} required username=\x85 password=b;",
    f"{PLAIN} required;",
    "",
    "  ;",
    'org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required '
    'clientId="id" clientSecret="x=y;z" scope="a b" extension_tenant="t1";',
]
_PIECES = ['"', "'", "\\", ";", "=", "/", "*", "\n", " ", "a", "b", "é", "\x85", "\x01",
           "🔑", "required", "username", "password", "x", "0", "7"]


def _oracle(values: list[str]) -> list[tuple[str, str, dict[str, str]] | None]:
    libs = fetch_jars()
    lines = "".join(base64.b64encode(v.encode()).decode() + "\n" for v in values)
    done = subprocess.run(["java", "-cp", f"{libs}/*", str(ORACLE)], input=lines,
                          capture_output=True, text=True, timeout=180, check=True)
    out: list[tuple[str, str, dict[str, str]] | None] = []
    for line in done.stdout.splitlines():
        if line == "ERR":
            out.append(None)
            continue
        _, module, flag, *options = line.split("\t")
        pairs = dict(o.split(":", 1) for o in options)
        out.append((base64.b64decode(module).decode(), flag.rsplit(" ", 1)[-1].upper(),
                    {base64.b64decode(k).decode(): base64.b64decode(v).decode()
                     for k, v in pairs.items()}))
    assert len(out) == len(values), done.stderr[-2000:]
    return out


def _ours(value: str) -> tuple[str, str, dict[str, str]] | None:
    try:
        entry = parse_jaas(value)
    except JaasError:
        return None
    return entry.module, entry.flag, entry.options


def test_jaas_values_read_as_the_java_client_reads_them() -> None:
    rng = random.Random(11)
    values = list(CASES)
    for i in range(600):  # a valid line with random pieces in a quoted value, or anywhere
        piece = "".join(rng.choice(_PIECES) for _ in range(rng.randint(1, 8)))
        parts = [PLAIN, "required", 'username="u"', "password=p", ";"]
        if i % 2:
            parts[2] = f'username="{piece}"'
        else:
            parts.insert(rng.randint(1, 4), piece)
        values.append(" ".join(parts))
    want = _oracle(values)
    wrong = [(v, w, _ours(v)) for v, w in zip(values, want, strict=True) if _ours(v) != w]
    assert not wrong, "\n".join(f"{v!r}: java {w!r}, ours {o!r}" for v, w, o in wrong[:10])
    assert sum(w is not None for w in want) > 150  # the random lines are not all refused
