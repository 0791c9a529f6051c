"""librdkafka settings from the pipeline's ``properties.*`` pass-through: the settings both
clients know as they are, the Java client's own spellings turned into librdkafka's
(kafka/java_settings.py), a librdkafka spelling given by the user winning over a derived one."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from cdc_ingest.kafka.java_client import java_client_settings
from cdc_ingest.kafka.java_settings import Problem, librdkafka_settings

# properties.* go to two clients: librdkafka (capture, the sink's writers, admin) and the Java
# client inside Spark's Kafka source. The Java spellings are carried over to librdkafka's
# (java_settings.py); librdkafka's own are skipped for the Java client.
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


# what each derived setting stands in for: a user's librdkafka setting of these wins
_GIVEN_INSTEAD = {
    "ssl.ca.pem": ("ssl.ca.location", "ssl.ca.pem"),
    "ssl.certificate.pem": ("ssl.certificate.location", "ssl.certificate.pem",
                            "ssl.key.location", "ssl.key.pem"),
    "ssl.key.pem": ("ssl.certificate.location", "ssl.certificate.pem", "ssl.key.location",
                    "ssl.key.pem"),
    "sasl.username": ("sasl.username",),
    "sasl.password": ("sasl.password",),
    "ssl.endpoint.identification.algorithm": (),  # Java's "" is librdkafka's "none"
}
# the Java key store settings librdkafka would also read (PKCS12 only): replaced by the PEM
# identity derived from them
_KEY_STORE = ("ssl.keystore.location", "ssl.keystore.password", "ssl.key.password")


def client_config(properties: Mapping[str, Any], **overrides: Any) -> dict[str, Any]:
    """Client settings: every ``properties.*`` option (prefix dropped) librdkafka knows, the
    Java-spelled ones carried over, plus ``overrides``."""
    given = {key.removeprefix("properties."): _secret_value(value)
             for key, value in properties.items()}
    config = {name: value for name, value in given.items() if name not in JAVA_ONLY}
    derived, _ = librdkafka_settings({k: str(v) for k, v in given.items()})
    for name, value in derived.items():
        if not any(other in given for other in _GIVEN_INSTEAD.get(name, (name,))):
            if name == "ssl.certificate.pem":
                for stale in _KEY_STORE:
                    config.pop(stale, None)
            config[name] = value
    config.update(overrides)
    return config


def java_client_config(properties: Mapping[str, Any]) -> tuple[dict[str, str], list[Problem]]:
    """The Java client's settings (Spark's Kafka source): the Java spellings as they are,
    librdkafka's carried over (kafka/java_client.py); and what cannot be carried over."""
    given = {key.removeprefix("properties."): str(_secret_value(value))
             for key, value in properties.items()}
    return java_client_settings(given, LIBRDKAFKA_ONLY)


def _secret_value(value: Any) -> Any:
    getter = getattr(value, "get_secret_value", None)
    return getter() if callable(getter) else value
