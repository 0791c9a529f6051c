"""``${VAR}``, ``${VAR:-default}``, ``${file:...}`` and the secrecy of what they bring in."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

from cdc_ingest.config import load_pipeline, parse_pipeline
from cdc_ingest.errors import ConfigError
from tests.unit.test_config import minimal


def with_source(**options: Any) -> str:
    return yaml.safe_dump(minimal(source=options), sort_keys=False)


def test_variable_and_default() -> None:
    text = with_source(hostname="${HOST}", port="${PORT:-3307}", username="${U:-cdc}")
    defn = parse_pipeline(text, {"HOST": "db1", "U": "reader"})
    assert (defn.source.hostname, defn.source.port, defn.source.username) == ("db1", 3307,
                                                                              "reader")


def test_default_applies_to_empty_variable() -> None:
    defn = parse_pipeline(with_source(hostname="${HOST:-fallback}"), {"HOST": ""})
    assert defn.source.hostname == "fallback"


def test_empty_variable_without_default_is_used_as_is() -> None:
    defn = parse_pipeline(with_source(password="${PW}"), {"PW": ""})
    assert defn.source.password.get_secret_value() == ""


def test_references_inside_text_and_lists() -> None:
    doc = minimal(source={"hostname": "db-${ENV}.internal"},
                  route=[{"source-table": "${DB}.orders", "sink-table": "${ENV}.orders"}])
    defn = parse_pipeline(yaml.safe_dump(doc), {"ENV": "prod", "DB": "shop"})
    assert defn.source.hostname == "db-prod.internal"
    assert defn.routes[0].source_table == "shop.orders"
    assert defn.routes[0].sink_table == "prod.orders"


def test_dotted_variable_names() -> None:
    defn = parse_pipeline(with_source(hostname="${mysql.hostname}"), {"mysql.hostname": "h2"})
    assert defn.source.hostname == "h2"


def test_escaped_reference_is_literal() -> None:
    defn = parse_pipeline(with_source(name="$${NOT_A_VAR}"), {})
    assert defn.source.name == "${NOT_A_VAR}"


def test_environ_defaults_to_os_environ(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CDC_TEST_HOST", "from-os")
    assert parse_pipeline(with_source(hostname="${CDC_TEST_HOST}")).source.hostname == "from-os"


def test_undefined_variable_is_reported_at_its_path_once() -> None:
    with pytest.raises(ConfigError) as caught:
        parse_pipeline(with_source(port="${MYSQL_PORT}", hostname="${MYSQL_HOST}"), {})
    problems = {p.path: p for p in caught.value.problems}
    assert set(problems) == {"source.port", "source.hostname"}  # no "must be a number" too
    assert problems["source.port"].message == (
        "uses the environment variable 'MYSQL_PORT', which is not set")
    assert "${MYSQL_PORT:-default}" in problems["source.port"].fix


def test_an_unset_password_variable_is_not_given_a_default_as_fix() -> None:
    doc = minimal(source={"password": "${MYSQL_PASSWORD}"})
    with pytest.raises(ConfigError) as caught:
        parse_pipeline(yaml.safe_dump(doc), {})
    problem = caught.value.problems[0]
    assert problem.path == "source.password"
    assert ":-default" not in problem.fix and "${file:" in problem.fix
    assert "export MYSQL_PASSWORD=" in problem.fix


def test_undefined_variable_in_a_route() -> None:
    doc = minimal(route=[{"source-table": "a.b", "sink-table": "${TOPIC}"}])
    with pytest.raises(ConfigError) as caught:
        parse_pipeline(yaml.safe_dump(doc), {})
    assert [p.path for p in caught.value.problems] == ["route[0].sink-table"]


@pytest.mark.parametrize(("value", "message"), [
    ("${}", "has a malformed reference '${}'"),
    ("${1ABC}", "has a malformed reference '${1ABC}'"),
    ("${HOST", "has a '${' without a closing '}'"),
])
def test_malformed_references(value: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        parse_pipeline(with_source(hostname=value), {"HOST": "x"})
    assert [(p.path, p.message) for p in caught.value.problems] == [("source.hostname", message)]


def test_secret_file_strips_trailing_newline(tmp_path: Path) -> None:
    secret = tmp_path / "mysql_password"
    secret.write_text("s3cr3t-from-file\n", encoding="utf-8")
    defn = parse_pipeline(with_source(password=f"${{file:{secret}}}"), {})
    assert defn.source.password.get_secret_value() == "s3cr3t-from-file"
    assert "s3cr3t-from-file" not in repr(defn)


def test_secret_file_relative_to_the_pipeline_file(tmp_path: Path) -> None:
    (tmp_path / "secrets").mkdir()
    (tmp_path / "secrets" / "pw").write_text("pw-rel\r\n", encoding="utf-8")
    config = tmp_path / "pipeline.yaml"
    config.write_text(with_source(password="${file:secrets/pw}"), encoding="utf-8")
    assert load_pipeline(config, {}).source.password.get_secret_value() == "pw-rel"


def test_missing_secret_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope"
    with pytest.raises(ConfigError) as caught:
        parse_pipeline(with_source(password=f"${{file:{missing}}}"), {})
    (problem,) = caught.value.problems
    assert problem.path == "source.password"
    assert problem.message.startswith(f"reads the secret file '{missing}', which cannot be read")
    assert problem.fix == "create the file or correct the path"


def test_secrets_never_reach_repr_or_errors() -> None:
    environ = {"MYSQL_PASSWORD": "env-password-42", "KAFKA_PW": "env-kafka-43"}
    doc = minimal(source={"password": "${MYSQL_PASSWORD}", "port": "not-a-port"},
                  sink={"properties.sasl.password": "${KAFKA_PW}"})
    with pytest.raises(ConfigError) as caught:
        parse_pipeline(yaml.safe_dump(doc), environ)
    assert "env-password-42" not in str(caught.value)
    assert "env-kafka-43" not in str(caught.value)
    doc["source"]["port"] = 3306
    defn = parse_pipeline(yaml.safe_dump(doc), environ)
    assert "env-password-42" not in repr(defn) and "env-kafka-43" not in repr(defn)


def test_secret_in_a_wrongly_typed_option_is_not_echoed() -> None:
    doc = minimal(source={"port": "${MYSQL_PASSWORD}"})
    with pytest.raises(ConfigError) as caught:
        parse_pipeline(yaml.safe_dump(doc), {"MYSQL_PASSWORD": "oops-secret-44"})
    assert "oops-secret-44" not in str(caught.value)


def test_unreadable_pipeline_file(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as caught:
        load_pipeline(tmp_path / "missing.yaml", {})
    (problem,) = caught.value.problems
    assert problem.path == str(tmp_path / "missing.yaml")
    assert problem.message.startswith("cannot read the pipeline file")


def test_yaml_error_names_the_file(tmp_path: Path) -> None:
    config = tmp_path / "bad.yaml"
    config.write_text("source: [\n", encoding="utf-8")
    with pytest.raises(ConfigError) as caught:
        load_pipeline(config, {})
    assert caught.value.problems[0].path == str(config)
