"""Schema Registry: the REST client the ``avro-confluent`` format uses."""

from cdc_ingest.registry.client import (
    RegistryClient,
    RegistryConfig,
    RegistryError,
    RegistryRefused,
    RegistryUnavailable,
)

__all__ = ["RegistryClient", "RegistryConfig", "RegistryError", "RegistryRefused",
           "RegistryUnavailable"]
