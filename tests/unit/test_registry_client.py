"""The registry client's failure paths that need no registry: nothing listening, retried for
the configured time, then a clear error; no secret in repr or messages."""

from __future__ import annotations

import socket
import time

import pytest

from cdc_ingest.registry import RegistryClient, RegistryConfig, RegistryUnavailable


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])  # closed again when the block ends


def test_a_registry_that_is_down_is_retried_then_named_with_the_fix() -> None:
    url = f"http://bob:s3cret@127.0.0.1:{_closed_port()}/apis/ccompat/v7"
    client = RegistryClient(RegistryConfig((url,), retry_seconds=1.5))
    began = time.monotonic()
    with pytest.raises(RegistryUnavailable) as caught:
        client.register("orders-value", '{"type":"string"}')
    waited = time.monotonic() - began
    text = str(caught.value)
    assert 0.5 <= waited <= 1.5, waited  # retried with backoff, within the configured time
    assert "POST /subjects/orders-value/versions failed" in text
    assert "attempt(s)" in text and "Connection refused" in text
    assert "Fix: start the registry or correct the avro-confluent.url option" in text
    assert "nothing was written without its schema" in text
    assert "s3cret" not in text and "bob" not in text and "s3cret" not in repr(client)


def test_no_retry_when_asked_for_one_attempt() -> None:
    client = RegistryClient(RegistryConfig((f"http://127.0.0.1:{_closed_port()}",),
                                           retry_seconds=0))
    began = time.monotonic()
    with pytest.raises(RegistryUnavailable, match=r"\(1 attempt\(s\)"):
        client.ping()
    assert time.monotonic() - began < 2


def test_secrets_stay_out_of_repr() -> None:
    config = RegistryConfig(("https://r:8081",), user_info="u:pw", bearer_token="tok",
                            key_password="kp")
    assert "pw" not in repr(config) and "tok" not in repr(config) and "kp" not in repr(config)
