"""librdkafka settings from the pipeline's ``properties.*`` pass-through."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# properties.* go to two clients: librdkafka (capture, the sink's writers, admin) and the Java
# client inside Spark's Kafka source. Each takes the settings it knows; a user gives both
# spellings where they differ (TLS files, SASL credentials).
JAVA_ONLY = frozenset({
    "sasl.jaas.config", "sasl.login.callback.handler.class",
    "sasl.client.callback.handler.class", "security.providers",
    "ssl.truststore.location", "ssl.truststore.password", "ssl.truststore.type",
    "ssl.truststore.certificates", "ssl.keystore.type", "ssl.keystore.certificate.chain",
    "ssl.keystore.key", "ssl.enabled.protocols", "ssl.protocol", "ssl.provider",
    "ssl.trustmanager.algorithm", "ssl.keymanager.algorithm", "ssl.secure.random.implementation",
    "key.serializer", "value.serializer", "key.deserializer", "value.deserializer",
})
LIBRDKAFKA_ONLY = frozenset({
    "ssl.ca.location", "ssl.ca.pem", "ssl.certificate.location", "ssl.certificate.pem",
    "ssl.key.location", "ssl.key.pem", "sasl.username", "sasl.password",
    "enable.ssl.certificate.verification", "ssl.ca.certificate.stores", "ssl.engine.location",
    "partitioner", "queue.buffering.max.messages", "queue.buffering.max.kbytes",
})


def client_config(properties: Mapping[str, Any], **overrides: Any) -> dict[str, Any]:
    """Client settings: every ``properties.*`` option (prefix dropped) plus ``overrides``."""
    config: dict[str, Any] = {}
    for key, value in properties.items():
        name = key.removeprefix("properties.")
        if name in JAVA_ONLY:
            continue
        config[name] = _secret_value(value)
    config.update(overrides)
    return config


def _secret_value(value: Any) -> Any:
    getter = getattr(value, "get_secret_value", None)
    return getter() if callable(getter) else value
