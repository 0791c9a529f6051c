"""librdkafka settings from the pipeline's ``properties.*`` pass-through."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

# Java client names that librdkafka spells differently or does not know.
_RENAMED = {"sasl.jaas.config": None, "key.serializer": None, "value.serializer": None}


def client_config(properties: Mapping[str, Any], **overrides: Any) -> dict[str, Any]:
    """Client settings: every ``properties.*`` option (prefix dropped) plus ``overrides``."""
    config: dict[str, Any] = {}
    for key, value in properties.items():
        name = key.removeprefix("properties.")
        if name in _RENAMED:
            continue
        config[name] = _secret_value(value)
    config.update(overrides)
    return config


def _secret_value(value: Any) -> Any:
    getter = getattr(value, "get_secret_value", None)
    return getter() if callable(getter) else value
