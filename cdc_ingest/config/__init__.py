"""The YAML pipeline definition (Flink CDC vocabulary) as frozen pydantic models.

``load_pipeline(path)`` / ``parse_pipeline(text)`` return a :class:`PipelineDef` or raise one
:class:`~cdc_ingest.errors.ConfigError` listing every problem with its YAML path and fix.
"""

from cdc_ingest.config.definition import PipelineDef
from cdc_ingest.config.durations import format_duration, parse_duration
from cdc_ingest.config.loader import load_pipeline, parse_pipeline
from cdc_ingest.config.pipeline import PipelineOptions, RouteDef
from cdc_ingest.config.sink import UpsertKafkaSinkDef, ValueFieldsInclude
from cdc_ingest.config.sink_base import DeliveryGuarantee
from cdc_ingest.config.source import MySqlSourceDef
from cdc_ingest.config.source_types import ServerIdRange, StartupMode
from cdc_ingest.routing.routes import RouteMode

__all__ = [
    "DeliveryGuarantee",
    "MySqlSourceDef",
    "PipelineDef",
    "PipelineOptions",
    "RouteDef",
    "RouteMode",
    "ServerIdRange",
    "StartupMode",
    "UpsertKafkaSinkDef",
    "ValueFieldsInclude",
    "format_duration",
    "load_pipeline",
    "parse_duration",
    "parse_pipeline",
]
