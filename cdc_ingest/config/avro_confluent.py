"""``key.avro-confluent.*`` / ``value.avro-confluent.*``: the Schema Registry options of the
``avro-confluent`` format (Flink's ``avro-confluent`` options, with the ``key.``/``value.``
prefix upsert-kafka gives a format's options). ``avro-confluent.*`` without a prefix sets both
(the prefixed option wins). docs/configuration.md lists them; docs/output-contract.md says
what is written."""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import Field, PlainSerializer, PlainValidator, SecretStr

from cdc_ingest.config.problems import Found, problem
from cdc_ingest.config.types import ConfigModel, MaskedDict, is_secret_property
from cdc_ingest.keystores import StoreError, identity, trusted_certificates
from cdc_ingest.registry import RegistryConfig

PREFIX = "avro-confluent."
FORMAT = "avro-confluent"
# Flink's fallback keys (schema-registry.*) and the options under their Flink names
FALLBACK = {"schema-registry.url": "url", "schema-registry.subject": "subject",
            "schema-registry.schema": "schema"}
BASIC_SOURCES = ("USER_INFO", "URL")
BEARER_SOURCES = ("STATIC_TOKEN",)


def _client_properties(value: Any) -> MaskedDict:
    if not isinstance(value, dict):
        raise problem("must be a mapping of client properties",
                      "write avro-confluent.properties.<property>: value")
    return MaskedDict({str(k): str(v) for k, v in value.items()})


def _masked(props: MaskedDict) -> dict[str, str]:
    return {k: "**********" if is_secret_property(k) else v for k, v in props.items()}


# secret values masked in repr and in a JSON dump
ClientProperties = Annotated[MaskedDict, PlainValidator(_client_properties),
                             PlainSerializer(_masked, when_used="json")]


class AvroConfluentOptions(ConfigModel):
    """One format's registry options (the key's or the value's)."""

    url: str | None = Field(None, description="the Schema Registry URL (comma-separated for "
                            "several); Apicurio's Confluent API is `<base>/apis/ccompat/v7`. "
                            "Required with the avro-confluent format")
    subject: str | None = Field(None, description="the subject schemas are registered under; "
                                "default `<topic>-key` / `<topic>-value` (Flink's "
                                "TopicNameStrategy), which needs one topic per subject")
    schema_: str | None = Field(None, alias="schema", description="Flink's option to give the "
                                "schema; not taken: cdc-ingest derives it from the table")
    basic_auth_credentials_source: str | None = Field(
        None, alias="basic-auth.credentials-source",
        description="`USER_INFO` (basic-auth.user-info) or `URL` (user info in the url)")
    basic_auth_user_info: SecretStr | None = Field(
        None, alias="basic-auth.user-info", description="`user:password` for HTTP basic auth; "
        "secret: use ${VAR} or ${file:...}")
    bearer_auth_credentials_source: str | None = Field(
        None, alias="bearer-auth.credentials-source", description="`STATIC_TOKEN`")
    bearer_auth_token: SecretStr | None = Field(
        None, alias="bearer-auth.token", description="the bearer token; secret")
    ssl_truststore_location: str | None = Field(
        None, alias="ssl.truststore.location",
        description="CA certificates to trust for an https url: a JKS or PKCS12 trust store "
        "(as Flink reads it) or PEM")
    ssl_truststore_password: SecretStr | None = Field(
        None, alias="ssl.truststore.password", description="the trust store's password (JKS, "
        "PKCS12); secret")
    ssl_keystore_location: str | None = Field(
        None, alias="ssl.keystore.location",
        description="the client certificate and its private key for mutual TLS: a JKS or "
        "PKCS12 key store, or PEM (certificate and key in one file)")
    ssl_keystore_password: SecretStr | None = Field(
        None, alias="ssl.keystore.password", description="the key store's password, also the "
        "key's unless `properties.schema.registry.ssl.key.password` is set (for PEM: the "
        "key's); secret")
    properties: ClientProperties = Field(
        MaskedDict(), description="`avro-confluent.properties.<k>`: Confluent client properties; "
        "`basic.auth.user.info`, `bearer.auth.token`, `schema.registry.ssl.*` are read as the "
        "options above (which win)")

    def registry_config(self) -> RegistryConfig:
        props = self.properties
        user_info = (self.basic_auth_user_info.get_secret_value() if self.basic_auth_user_info
                     else props.get("basic.auth.user.info"))
        token = (self.bearer_auth_token.get_secret_value() if self.bearer_auth_token
                 else props.get("bearer.auth.token"))
        store_password = (self.ssl_keystore_password.get_secret_value()
                          if self.ssl_keystore_password
                          else props.get("schema.registry.ssl.keystore.password"))
        ca_password = (self.ssl_truststore_password.get_secret_value()
                       if self.ssl_truststore_password
                       else props.get("schema.registry.ssl.truststore.password"))
        source = (self.basic_auth_credentials_source
                  or props.get("basic.auth.credentials.source") or "").upper()
        return RegistryConfig(
            urls=tuple(u.strip() for u in (self.url or "").split(",") if u.strip()),
            user_info=user_info if source != "URL" else None,
            bearer_token=token,
            ca_file=self.ssl_truststore_location
            or props.get("schema.registry.ssl.truststore.location"),
            ca_password=ca_password,
            cert_file=self.ssl_keystore_location
            or props.get("schema.registry.ssl.keystore.location"),
            store_password=store_password,
            key_password=props.get("schema.registry.ssl.key.password") or store_password)


def gather(data: dict[str, Any]) -> dict[str, Any]:
    """Fold the flat ``[key.|value.]avro-confluent.*`` keys of the YAML into two mappings,
    ``key.avro-confluent`` and ``value.avro-confluent``."""
    shared: dict[str, Any] = {}
    sides: dict[str, dict[str, Any]] = {"key.": {}, "value.": {}}
    rest: dict[str, Any] = {}
    for raw_key, value in data.items():
        key = str(raw_key)
        side = next((s for s in sides if key.startswith(s + PREFIX)
                     or key.startswith(s + "schema-registry.")), None)
        plain = key[len(side):] if side else key
        if plain.startswith(PREFIX):
            name = plain[len(PREFIX):]
        elif plain in FALLBACK:
            name = FALLBACK[plain]
        else:
            rest[raw_key] = value
            continue
        target = sides[side] if side else shared
        if name.startswith("properties."):
            target.setdefault("properties", {})[name[len("properties."):]] = value
        else:
            target[name] = value
    if not shared and not any(sides.values()):
        return data
    for side, given in sides.items():
        merged = {**shared, **given}
        merged["properties"] = {**shared.get("properties", {}), **given.get("properties", {})}
        rest[side + FORMAT] = merged
    return rest


def problems(side: str, fmt: str, options: AvroConfluentOptions | None) -> Found:
    """What is wrong with one side's options, for its format (``key`` / ``value``)."""
    where = f"{side}.{FORMAT}"
    found: Found = []
    if fmt != FORMAT:
        if options is not None and options.url:
            found.append(((where, "url"), f"is set but {side}.format is {fmt}",
                          f"set {side}.format: avro-confluent, or remove the option"))
        return found
    if options is None or not options.url:
        found.append(((where, "url"), "required option is missing",
                      f"add '{where}.url: http://registry:8081' (or avro-confluent.url for "
                      "key and value)"))
        return found
    for url in options.url.split(","):
        if not url.strip().lower().startswith(("http://", "https://")):
            found.append(((where, "url"), f"'{url.strip()}' is not an http(s) URL",
                          "write http://host:port[/path]"))
    if options.schema_ is not None:
        found.append(((where, "schema"), "is not taken: cdc-ingest derives the schema from "
                      "the table (docs/output-contract.md, avro-confluent)",
                      "remove it; the derived schema is Flink's for the same table"))
    basic = (options.basic_auth_credentials_source or "").upper()
    if basic and basic not in BASIC_SOURCES:
        found.append(((where, "basic-auth.credentials-source"), "is not a supported value",
                      f"use one of: {', '.join(BASIC_SOURCES)}"))
    if basic == "USER_INFO" and options.basic_auth_user_info is None \
            and "basic.auth.user.info" not in options.properties:
        found.append(((where, "basic-auth.user-info"), "required with credentials-source "
                      "USER_INFO", "add basic-auth.user-info: ${REGISTRY_USER_INFO}"))
    if options.basic_auth_user_info is not None and \
            ":" not in options.basic_auth_user_info.get_secret_value():
        found.append(((where, "basic-auth.user-info"), "must be user:password",
                      "write it as user:password"))
    bearer = (options.bearer_auth_credentials_source or "").upper()
    if bearer and bearer not in BEARER_SOURCES:
        found.append(((where, "bearer-auth.credentials-source"), "is not a supported value",
                      "use STATIC_TOKEN with bearer-auth.token (OAuth token endpoints are not "
                      "supported: fetch the token outside and pass it in)"))
    if options.bearer_auth_token is not None and options.basic_auth_user_info is not None:
        found.append(((where, "bearer-auth.token"), "and basic-auth.user-info are both set",
                      "keep one way of authenticating"))
    found.extend(_store_problems(where, options))
    return found


def _store_problems(where: str, options: AvroConfluentOptions) -> Found:
    """A trust or key store that cannot be read, as the registry client would read it."""
    config = options.registry_config()
    found: Found = []
    try:
        if config.ca_file:
            trusted_certificates(config.ca_file, None, config.ca_password)
    except StoreError as exc:
        found.append(((where, "ssl.truststore.location"), str(exc),
                      "give the trust store Flink would read, with its password"))
    try:
        if config.cert_file:
            identity(config.cert_file, None, config.store_password, config.key_password)
    except StoreError as exc:
        found.append(((where, "ssl.keystore.location"), str(exc),
                      "give the key store Flink would read, with its password"))
    return found


def jackson_problems(avro_key: bool, jackson_keys: bool) -> Found:
    if avro_key and jackson_keys:
        return [(("key.json.encoding",), "applies to key.format json only",
                 "remove it, or set key.format: json")]
    return []
