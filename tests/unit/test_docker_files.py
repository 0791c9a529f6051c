"""docker/: the Dockerfile, compose.yaml and the pipeline they run agree with each other.

No Docker engine is needed (nor used): the files are read as text / YAML and cross-checked,
so a renamed service, a moved mount or a dropped binlog option fails here, not at `up`.
"""

from __future__ import annotations

import fnmatch
import json
import re
import shlex
import tempfile
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path, PurePosixPath
from typing import Any

import pytest
import yaml

from cdc_ingest.commands.preflight import _SETTINGS as VALIDATE_SETTINGS
from cdc_ingest.config import PipelineDef, parse_pipeline

REPO = Path(__file__).resolve().parents[2]
DOCKER = REPO / "docker"
COMPOSE = DOCKER / "compose.yaml"
DOCKERFILE = DOCKER / "Dockerfile"
SERVICES = ("mysql", "kafka", "cdc-ingest")
CDC = "cdc-ingest"

# ---------------------------------------------------------------- compose helpers

_COMPOSE_VAR = re.compile(r"\$\$|\$\{([A-Za-z_][A-Za-z0-9_]*)(?:(:?[-?])([^}]*))?\}")


def compose_interpolate(value: Any, env: dict[str, str]) -> Any:
    """What `docker compose` does to the file's values: ${VAR}, ${VAR:-default}, $$ -> $."""
    if isinstance(value, dict):
        return {k: compose_interpolate(v, env) for k, v in value.items()}
    if isinstance(value, list):
        return [compose_interpolate(v, env) for v in value]
    if not isinstance(value, str):
        return value

    def repl(m: re.Match[str]) -> str:
        if m.group(0) == "$$":
            return "$"
        name, op, arg = m.group(1), m.group(2), m.group(3) or ""
        current = env.get(name)
        if op in (":-", "-") and (current is None or (op == ":-" and current == "")):
            return arg
        return current or ""

    return _COMPOSE_VAR.sub(repl, value)


@cache
def compose() -> dict[str, Any]:
    raw = yaml.safe_load(COMPOSE.read_text(encoding="utf-8"))
    # the defaults in the file, as `docker compose up` uses them with nothing exported
    return compose_interpolate(raw, {})


def service(name: str) -> dict[str, Any]:
    return compose()["services"][name]


def environment(name: str) -> dict[str, str]:
    env = service(name).get("environment") or {}
    if isinstance(env, list):
        env = dict(item.split("=", 1) if "=" in item else (item, "") for item in env)
    return {str(k): "" if v is None else str(v) for k, v in env.items()}


@dataclass(frozen=True)
class Mount:
    source: str
    target: str
    bind: bool  # a host path (relative to docker/), else a named volume


def mounts(name: str) -> list[Mount]:
    found = []
    for volume in service(name).get("volumes") or []:
        if isinstance(volume, dict):
            source, target = str(volume.get("source", "")), str(volume["target"])
            bind = volume.get("type") == "bind"
        else:
            parts = str(volume).split(":")
            source, target = (parts[0], parts[1]) if len(parts) > 1 else ("", parts[0])
            bind = source.startswith((".", "/", "~"))
        found.append(Mount(source, target, bind))
    return found


def host_path(mount: Mount) -> Path:
    return (DOCKER / mount.source).resolve()


def published_container_ports(name: str) -> set[int]:
    ports = set()
    for entry in service(name).get("ports") or []:
        if isinstance(entry, dict):
            ports.add(int(entry["target"]))
        else:
            ports.add(int(str(entry).split("/")[0].rsplit(":", 1)[-1]))
    return ports


def healthcheck_text(name: str) -> str:
    test = (service(name).get("healthcheck") or {}).get("test")
    return " ".join(test) if isinstance(test, list) else str(test or "")


def depends_on(name: str) -> dict[str, dict[str, Any]]:
    deps = service(name).get("depends_on") or {}
    return {d: {} for d in deps} if isinstance(deps, list) else dict(deps)


def under(path: str, directory: str) -> bool:
    return PurePosixPath(path).is_relative_to(PurePosixPath(directory))


# ---------------------------------------------------------------- Dockerfile helpers


@dataclass
class Stage:
    base: str
    alias: str | None
    instructions: list[tuple[str, str]] = field(default_factory=list)

    def args(self, keyword: str) -> list[str]:
        return [a for k, a in self.instructions if k == keyword]

    def env(self) -> dict[str, str]:
        values: dict[str, str] = {}
        for arg in self.args("ENV"):
            words = shlex.split(arg)
            if words and "=" not in words[0]:  # legacy `ENV KEY value`
                values[words[0]] = " ".join(words[1:])
            else:
                values.update(w.split("=", 1) for w in words)
        return values


@cache
def dockerfile_stages() -> list[Stage]:
    """The Dockerfile's stages, each a list of (INSTRUCTION, arguments) with `\\` joined."""
    logical: list[str] = []
    pending = ""
    for line in DOCKERFILE.read_text(encoding="utf-8").splitlines():
        stripped = line.strip()
        if stripped.startswith("#") or (not stripped and pending):
            continue  # comment lines (also inside a continuation), blank continuation lines
        if stripped.endswith("\\"):
            pending += stripped[:-1] + " "
            continue
        if pending + stripped:
            logical.append(pending + stripped)
        pending = ""
    assert not pending, "the Dockerfile ends with a dangling `\\` continuation"
    stages: list[Stage] = []
    for text in logical:
        keyword, _, arg = text.partition(" ")
        keyword, arg = keyword.upper(), arg.strip()
        if keyword == "FROM":
            words = [w for w in arg.split() if not w.startswith("--")]
            alias = words[2] if len(words) >= 3 and words[1].upper() == "AS" else None
            stages.append(Stage(words[0], alias))
        else:
            assert stages, f"Dockerfile instruction before the first FROM: {text}"
            stages[-1].instructions.append((keyword, arg))
    assert stages, "docker/Dockerfile has no FROM"
    return stages


def final_stage() -> Stage:
    return dockerfile_stages()[-1]


def exec_form(stage: Stage, keyword: str) -> list[str]:
    values = stage.args(keyword)
    assert values, f"the final Dockerfile stage has no {keyword}"
    arg = values[-1]  # the last one wins
    assert arg.startswith("["), f"{keyword} should be in exec (JSON) form, got: {arg}"
    return list(json.loads(arg))


def config_path(argv: list[str]) -> str:
    assert "--config" in argv, f"no --config in {argv}"
    return argv[argv.index("--config") + 1]


# ---------------------------------------------------------------- the pipeline


def pipeline_mount() -> Mount:
    target = config_path(exec_form(final_stage(), "CMD"))
    found = [m for m in mounts(CDC) if m.target == target]
    assert found, (f"the Dockerfile's CMD reads --config {target}, but the {CDC} service "
                   f"mounts nothing there: {[m.target for m in mounts(CDC)]}")
    return found[0]


SECRETS_DIR = "/run/secrets/"
_SECRET_REF = re.compile(r"\$\{file:" + re.escape(SECRETS_DIR) + r"([A-Za-z0-9_.-]+)\}")


def dotenv() -> dict[str, str]:
    """docker/.env, as Compose reads it (KEY=value lines)."""
    values = {}
    for line in (DOCKER / ".env").read_text(encoding="utf-8").splitlines():
        if line.strip() and not line.lstrip().startswith("#") and "=" in line:
            key, _, value = line.partition("=")
            values[key.strip()] = value.strip()
    return values


def secret_value(name: str) -> str:
    """What Compose puts in /run/secrets/<name> with .env as it is."""
    source = compose()["secrets"][name]
    assert "environment" in source, f"secret {name} does not come from a variable: {source}"
    return dotenv()[source["environment"]]


def service_secrets(name: str) -> set[str]:
    return {s if isinstance(s, str) else s["source"] for s in service(name).get("secrets") or []}


@cache
def pipeline() -> PipelineDef:
    mount = pipeline_mount()
    path = host_path(mount)
    text = path.read_text(encoding="utf-8")
    # the Compose secrets the pipeline reads, as files with what Compose would put in them
    secrets = Path(tempfile.mkdtemp(prefix="docker-secrets-"))
    for name in _SECRET_REF.findall(text):
        assert name in service_secrets(CDC), (
            f"pipeline.yaml reads {SECRETS_DIR}{name}, a secret the {CDC} service is not given")
        (secrets / name).write_text(secret_value(name), encoding="utf-8")
    text = text.replace("${file:" + SECRETS_DIR, "${file:" + str(secrets) + "/")
    return parse_pipeline(text, environment(CDC), source_name=str(path), base_dir=path.parent)


def kafka_listeners(var: str) -> dict[str, tuple[str, int]]:
    """``NAME://host:port,...`` -> {NAME: (host, port)}."""
    result = {}
    for item in environment("kafka").get(var, "").split(","):
        if "://" in item:
            name, _, address = item.strip().partition("://")
            host, _, port = address.rpartition(":")
            result[name] = (host, int(port))
    return result


# ================================================================ tests: compose.yaml


def test_the_three_services_exist() -> None:
    missing = [s for s in SERVICES if s not in compose().get("services", {})]
    assert not missing, f"docker/compose.yaml lacks the services {missing}"


@pytest.mark.parametrize("name", SERVICES)
def test_depends_on_targets_exist_and_are_health_checked(name: str) -> None:
    for target, options in depends_on(name).items():
        assert target in compose()["services"], (
            f"service {name} depends on {target!r}, which compose.yaml does not define")
        test = (service(target).get("healthcheck") or {}).get("test")
        assert test and test != ["NONE"], (
            f"service {name} waits for {target!r}, which has no healthcheck")
        condition = (options or {}).get("condition", "service_started")
        assert condition == "service_healthy", (
            f"service {name} depends on {target!r} with condition {condition!r}: "
            f"it would start before {target} accepts connections; use service_healthy")


def test_cdc_ingest_waits_for_mysql_and_kafka() -> None:
    assert set(depends_on(CDC)) >= {"mysql", "kafka"}, (
        f"{CDC} depends_on {sorted(depends_on(CDC))}, not both mysql and kafka")


@pytest.mark.parametrize("name", SERVICES)
def test_mounted_host_files_exist_and_named_volumes_are_declared(name: str) -> None:
    declared = set(compose().get("volumes") or {})
    for mount in mounts(name):
        if mount.bind:
            assert host_path(mount).exists(), (
                f"service {name} mounts {mount.source} (relative to docker/) at "
                f"{mount.target}, but {host_path(mount)} does not exist in the repository")
        else:
            assert mount.source in declared, (
                f"service {name} mounts the named volume {mount.source!r}, which the "
                f"top-level `volumes:` of compose.yaml does not declare ({sorted(declared)})")


def test_build_context_and_dockerfile_exist() -> None:
    build = service(CDC).get("build")
    assert isinstance(build, dict), f"{CDC} should `build:` the image with context and dockerfile"
    context = (DOCKER / build.get("context", ".")).resolve()
    dockerfile = context / build.get("dockerfile", "Dockerfile")
    assert context == REPO, f"build context is {context}, not the repository root {REPO}"
    assert dockerfile.resolve() == DOCKERFILE, (
        f"build.dockerfile resolves to {dockerfile}, not docker/Dockerfile")


# ---------------------------------------------------------------- mysql


def mysql_options() -> dict[str, str]:
    command = service("mysql").get("command") or []
    words = shlex.split(command) if isinstance(command, str) else [str(w) for w in command]
    options = {}
    for word in words:
        if word.startswith("--"):
            name, _, value = word[2:].partition("=")
            options[name.replace("_", "-").lower()] = value
    return options


@pytest.mark.parametrize(("variable", "expected"), [
    *((name, expected) for name, expected, _fix in VALIDATE_SETTINGS),
    ("gtid_mode", "ON"),
    ("enforce_gtid_consistency", "ON"),
])
def test_mysql_command_sets_what_validate_requires(variable: str, expected: str) -> None:
    options = mysql_options()
    option = variable.replace("_", "-")
    assert option in options, (
        f"the mysql service's command lacks --{option}: `cdc-ingest validate` requires "
        f"{variable}={expected}")
    if variable == "log_bin":  # --log-bin=<basename> turns it ON
        assert options[option].upper() not in ("OFF", "0"), "--log-bin must not be OFF"
    else:
        assert options[option].upper() == expected, (
            f"the mysql service runs with --{option}={options[option]}, but cdc-ingest "
            f"requires {variable}={expected}")


def test_mysql_has_a_nonzero_server_id() -> None:
    server_id = mysql_options().get("server-id", "0")
    assert server_id.isdigit() and int(server_id) > 0, (
        f"the mysql service's --server-id is {server_id!r}: a binlog needs a non-zero id")
    ids = pipeline().capture_server_ids  # the binlog reader's, then the snapshot readers'
    assert int(server_id) not in ids, (
        f"the pipeline's replica ids {ids[0]}-{ids[-1]} include the MySQL server's own "
        f"--server-id={server_id}")


def test_mysql_healthcheck_pings() -> None:
    assert "mysqladmin ping" in healthcheck_text("mysql"), (
        f"the mysql healthcheck should be `mysqladmin ping`, is: {healthcheck_text('mysql')}")


def test_mysql_init_script_creates_the_pipeline_user_with_its_grants_and_password() -> None:
    inits = [m for m in mounts("mysql") if m.bind and under(m.target, "/docker-entrypoint-initdb.d")]
    assert inits, "the mysql service mounts no init script into /docker-entrypoint-initdb.d/"
    text = "\n".join(host_path(m).read_text(encoding="utf-8") for m in inits)
    user = pipeline().source.username
    assert re.search(rf"CREATE USER[^;]*'{re.escape(user)}'@'%'", text), (
        f"the init script does not create the pipeline's user {user!r}@'%'")
    grant = re.search(rf"GRANT ([^;]*) ON \*\.\* TO '{re.escape(user)}'@'%'", text)
    assert grant, f"the init script grants nothing ON *.* to {user!r}"
    privileges = {p.strip().upper() for p in grant.group(1).split(",")}
    needed = {"REPLICATION SLAVE", "REPLICATION CLIENT", "SELECT"}
    assert privileges >= needed, (
        f"{user!r} gets {sorted(privileges)}; `cdc-ingest validate` needs {sorted(needed)}")
    # the .sh reads the password from the secret file CDC_PASSWORD_FILE names; cdc-ingest's
    # must be the same secret
    assert "CDC_PASSWORD_FILE" in text
    target = environment("mysql").get("CDC_PASSWORD_FILE", "")
    assert target.startswith(SECRETS_DIR), f"CDC_PASSWORD_FILE is {target!r}"
    name = target.removeprefix(SECRETS_DIR)
    assert name in service_secrets("mysql"), f"the mysql service is not given secret {name}"
    assert secret_value(name) == pipeline().source.password.get_secret_value(), (
        f"the mysql service creates {user!r} with secret {name}, the pipeline logs in with "
        f"another password")


def test_no_password_is_a_container_environment_variable() -> None:
    """Passwords reach containers as Compose secrets (files): `docker inspect` shows every
    environment variable, so none may hold one."""
    passwords = set(dotenv().values())
    for name in SERVICES:
        for var, value in environment(name).items():
            assert value not in passwords, f"{name}'s environment {var} holds a password"
            assert not re.search(r"PASSWORD$", var), (
                f"{name} gets {var} in its environment; pass it as a secret (…_FILE)")


def test_pipeline_points_at_the_mysql_service() -> None:
    source = pipeline().source
    assert source.hostname == "mysql", (
        f"the pipeline's source.hostname is {source.hostname!r}, not the service name 'mysql'")
    port = int(mysql_options().get("port", "3306"))
    assert source.port == port, f"the pipeline's source.port {source.port} != MySQL's {port}"


# ---------------------------------------------------------------- kafka


def test_pipeline_bootstrap_servers_match_the_kafka_service() -> None:
    servers = pipeline().sink.properties["bootstrap.servers"]
    listeners = kafka_listeners("KAFKA_LISTENERS")
    advertised = kafka_listeners("KAFKA_ADVERTISED_LISTENERS")
    controllers = set(environment("kafka").get("KAFKA_CONTROLLER_LISTENER_NAMES", "").split(","))
    for server in servers.split(","):
        host, _, port = server.strip().rpartition(":")
        assert host == "kafka", (
            f"properties.bootstrap.servers has {server!r}: the host is not the service 'kafka'")
        names = [n for n, (_h, p) in listeners.items() if p == int(port) and n not in controllers]
        assert names, (f"properties.bootstrap.servers has port {port}, but KAFKA_LISTENERS "
                       f"has no broker listener on it: {listeners}")
        assert advertised.get(names[0]) == ("kafka", int(port)), (
            f"listener {names[0]} on port {port} advertises {advertised.get(names[0])}, not "
            f"kafka:{port}: clients in the compose network would be sent elsewhere")


def test_kafka_is_a_single_node_kraft_broker_that_allows_transactions() -> None:
    env = environment("kafka")
    expected = {
        "KAFKA_PROCESS_ROLES": "broker,controller",
        "KAFKA_TRANSACTION_STATE_LOG_REPLICATION_FACTOR": "1",
        "KAFKA_TRANSACTION_STATE_LOG_MIN_ISR": "1",
        "KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR": "1",
        "KAFKA_AUTO_CREATE_TOPICS_ENABLE": "false",
    }
    for var, value in expected.items():
        assert env.get(var, "").lower() == value, (
            f"kafka's {var} is {env.get(var)!r}, expected {value!r}")
    node, voters = env.get("KAFKA_NODE_ID"), env.get("KAFKA_CONTROLLER_QUORUM_VOTERS", "")
    controller_ports = {p for n, (_h, p) in kafka_listeners("KAFKA_LISTENERS").items()
                        if n in env.get("KAFKA_CONTROLLER_LISTENER_NAMES", "").split(",")}
    match = re.fullmatch(r"(\d+)@([\w.-]+):(\d+)", voters)
    assert match, f"KAFKA_CONTROLLER_QUORUM_VOTERS {voters!r} is not one <id>@<host>:<port>"
    assert match.group(1) == node, f"the quorum voter {voters} is not KAFKA_NODE_ID={node}"
    assert int(match.group(3)) in controller_ports, (
        f"the quorum voter's port {match.group(3)} is no controller listener {controller_ports}")
    log_dirs = env.get("KAFKA_LOG_DIRS", "/tmp/kraft-combined-logs")
    assert any(not m.bind and under(log_dirs, m.target) for m in mounts("kafka")), (
        f"kafka's data ({log_dirs}) is on no named volume: topics vanish with the container")


def test_kafka_healthcheck_asks_the_broker() -> None:
    text = healthcheck_text("kafka")
    assert "kafka-broker-api-versions" in text or "kafka-topics" in text, (
        f"the kafka healthcheck does not talk to the broker: {text}")


# ---------------------------------------------------------------- cdc-ingest


def test_pipeline_state_and_checkpoint_live_on_a_volume() -> None:
    options = pipeline().pipeline
    volumes = [m.target for m in mounts(CDC) if not m.bind]
    for what, path in (("state.dir", str(options.state_dir)),
                       ("checkpoint.dir", options.checkpoint_dir)):
        assert path.startswith("/"), f"pipeline.{what} {path!r} is relative to the work dir"
        assert any(under(path, v) for v in volumes), (
            f"pipeline.{what} {path} is on no named volume of {CDC} ({volumes}): a restarted "
            f"container would lose it")


def test_metrics_port_is_published_and_health_checked() -> None:
    port = pipeline().pipeline.metrics_port
    assert port, "the pipeline sets no pipeline.metrics.port: nothing to health-check"
    published = published_container_ports(CDC)
    for p, what in ((port, "sink"), (port + 1, "capture")):
        assert p in published, (
            f"the {what} serves /metrics on {p} (pipeline.metrics.port {port}), but {CDC} "
            f"publishes {sorted(published)}")
    text = healthcheck_text(CDC) or " ".join(final_stage().args("HEALTHCHECK"))
    assert "cdc_ingest.healthcheck" in text, (
        f"the {CDC} healthcheck is not `python3 -m cdc_ingest.healthcheck`: {text}")
    env = {**final_stage().env(), **environment(CDC)}
    assert env.get("CDC_INGEST_HEALTHCHECK_PORT") == str(port), (
        f"the health check probes CDC_INGEST_HEALTHCHECK_PORT="
        f"{env.get('CDC_INGEST_HEALTHCHECK_PORT')}, the pipeline serves metrics on {port}")


def test_published_ports_are_on_loopback_only() -> None:
    for name in SERVICES:
        for entry in service(name).get("ports") or []:
            host_ip = (entry.get("host_ip") if isinstance(entry, dict)
                       else str(entry).split(":")[0] if str(entry).count(":") == 2 else "")
            assert host_ip == "127.0.0.1", (
                f"{name} publishes {entry} on every interface of the host; publish it on "
                f"127.0.0.1 (\"127.0.0.1:HOST:CONTAINER\")")


def test_metrics_listen_beyond_loopback() -> None:
    addr = environment(CDC).get("CDC_INGEST_METRICS_ADDR",
                                final_stage().env().get("CDC_INGEST_METRICS_ADDR", "127.0.0.1"))
    assert addr == "0.0.0.0", (
        f"CDC_INGEST_METRICS_ADDR is {addr!r}: /metrics would not be reachable through the "
        f"published ports")


def test_compose_command_matches_the_mounted_pipeline() -> None:
    command = service(CDC).get("command")
    if command is None:
        return  # the image's CMD, checked in test_dockerfile_entrypoint_and_cmd
    argv = shlex.split(command) if isinstance(command, str) else list(command)
    assert config_path(argv) == pipeline_mount().target, (
        f"the {CDC} command reads {config_path(argv)}, the pipeline is mounted at "
        f"{pipeline_mount().target}")


def test_pipeline_mount_is_read_only() -> None:
    entry = next(v for v in service(CDC)["volumes"]
                 if (v.get("target") if isinstance(v, dict) else v.split(":")[1])
                 == pipeline_mount().target)
    read_only = entry.get("read_only") if isinstance(entry, dict) else entry.endswith(":ro")
    assert read_only, f"the pipeline is mounted writable: {entry}"


# ================================================================ tests: Dockerfile


def test_dockerfile_bases_are_debian_bookworm_slim() -> None:
    # Debian 12's python3 is 3.11; the base is one a test machine without a registry can
    # make itself (tests/integration/docker_env.py) and users pull
    for stage in dockerfile_stages():
        assert stage.base == "debian:bookworm-slim", (
            f"stage FROM {stage.base}: expected debian:bookworm-slim")
    runs = " ".join(final_stage().args("RUN"))
    assert re.search(r"\bpython3\b", runs), "the final stage installs no python3"


def test_build_ca_is_a_secret_of_the_build_only() -> None:
    # the CA bundle a build behind a TLS proxy needs is mounted for one RUN, never copied
    for stage in dockerfile_stages():
        for arg in stage.args("COPY") + stage.args("ADD"):
            assert "ca-certificates.crt" not in arg and ".pem" not in arg, arg
        for run in stage.args("RUN"):
            if "with-build-ca" in run:
                assert "--mount=type=secret,id=build-ca" in run, run
    assert not any("with-build-ca" in r for r in final_stage().args("RUN")), (
        "the final stage uses the build CA")


def test_dockerfile_runs_as_a_non_root_user() -> None:
    users = final_stage().args("USER")
    assert users, "the final Dockerfile stage never switches USER: the pipeline runs as root"
    assert users[-1].split(":")[0] not in ("root", "0"), f"the final USER is {users[-1]}"


def test_dockerfile_final_stage_has_a_jre_17_and_no_maven() -> None:
    runs = " ".join(final_stage().args("RUN"))
    assert re.search(r"openjdk-17-jre(-headless)?\b", runs), (
        "the final stage installs no JRE 17 (openjdk-17-jre-headless): Spark cannot start")
    assert not re.search(r"\bmaven\b", runs), (
        "the final stage installs maven: the connector jars should be fetched in the build stage")


def test_dockerfile_bakes_in_the_spark_kafka_connector() -> None:
    stages = dockerfile_stages()
    fetching = [s for s in stages if any("cdc_ingest.sink.runtime.session fetch" in r for r in s.args("RUN"))]
    assert fetching, "no stage runs `python -m cdc_ingest.sink.runtime.session fetch`"
    stage = fetching[0]
    assert any(re.search(r"\bmaven\b", r) for r in stage.args("RUN")), (
        "the stage that runs the spark fetch does not install maven, which the fetch needs")
    cache_dir = stage.env().get("CDC_INGEST_CACHE")
    assert cache_dir, "the fetch runs without CDC_INGEST_CACHE: the jars land in ~/.cache"
    final_cache = final_stage().env().get("CDC_INGEST_CACHE")
    assert final_cache == cache_dir, (
        f"the jars are fetched into {cache_dir} but the image runs with "
        f"CDC_INGEST_CACHE={final_cache}: the sink would try to fetch them again (no maven)")
    if stage is not final_stage():
        copies = [c for c in final_stage().args("COPY") if c.startswith("--from=")]
        assert any(c.split()[-1].rstrip("/") == cache_dir
                   and f"--from={stage.alias}" in c.split() for c in copies), (
            f"the final stage does not COPY --from={stage.alias} {cache_dir}")


def test_dockerfile_entrypoint_and_cmd() -> None:
    assert exec_form(final_stage(), "ENTRYPOINT") == ["cdc-ingest"], (
        f"ENTRYPOINT is {exec_form(final_stage(), 'ENTRYPOINT')}, expected ['cdc-ingest']")
    cmd = exec_form(final_stage(), "CMD")
    assert cmd[0] == "start", f"CMD {cmd} does not run `cdc-ingest start`"
    pipeline_mount()  # asserts the compose service mounts the pipeline at CMD's --config


def test_dockerfile_has_a_healthcheck() -> None:
    checks = final_stage().args("HEALTHCHECK")
    assert checks and checks[-1].upper() != "NONE", "the final Dockerfile stage has no HEALTHCHECK"


def _dockerignored(relative: str) -> bool:
    """Whether .dockerignore leaves ``relative`` out (last matching pattern wins, like moby)."""
    ignore = REPO / ".dockerignore"
    if not ignore.exists():
        return False
    excluded = False
    parts = PurePosixPath(relative).parts
    candidates = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    for line in ignore.read_text(encoding="utf-8").splitlines():
        pattern = line.strip()
        if not pattern or pattern.startswith("#"):
            continue
        negate = pattern.startswith("!")
        pattern = pattern.lstrip("!").strip("/")
        if any(fnmatch.fnmatchcase(c, pattern) for c in candidates):
            excluded = not negate
    return excluded


def test_dockerfile_copies_exist_and_are_in_the_build_context() -> None:
    for stage in dockerfile_stages():
        for arg in stage.args("COPY") + stage.args("ADD"):
            words = [w for w in shlex.split(arg) if not w.startswith("--")]
            if any(w.startswith("--from") for w in shlex.split(arg)):
                continue
            for source in words[:-1]:
                assert (REPO / source).exists(), f"COPY {source}: not in the repository"
                probe = source
                if (REPO / source).is_dir():
                    probe = next(str(p.relative_to(REPO)) for p in (REPO / source).rglob("*.py"))
                assert not _dockerignored(probe), (
                    f"COPY {source}: .dockerignore leaves {probe} out of the build context")
    package_data = "cdc_ingest/services/kafka-log4j2.properties"
    assert not _dockerignored(package_data), f".dockerignore leaves out {package_data}"


# ================================================================ tests: compose.test.yaml

TEST_OVERRIDE = DOCKER / "compose.test.yaml"


@cache
def override() -> dict[str, Any]:
    return yaml.safe_load(TEST_OVERRIDE.read_text(encoding="utf-8"))


def test_the_override_only_swaps_images_and_passes_the_build_ca() -> None:
    """The test's override replaces mysql's and kafka's images with stand-ins built here and
    gives the builds the CA secret; everything else (environment, command, ports, volumes,
    health checks, depends_on, restart) is compose.yaml's, so the test runs it unchanged."""
    services = override()["services"]
    assert set(services) <= set(SERVICES)
    for name, entry in services.items():
        assert set(entry) <= {"image", "build"}, (
            f"compose.test.yaml changes {sorted(set(entry) - {'image', 'build'})} of {name}: "
            f"the test would not run compose.yaml's")
    for name in ("mysql", "kafka"):
        assert services[name]["image"] != service(name)["image"]
        build = services[name]["build"]
        context = DOCKER / build["context"]
        assert (context / build.get("dockerfile", "Dockerfile")).is_file(), build
    assert set(services["cdc-ingest"]["build"]) == {"secrets"}
    assert "build-ca" in override()["secrets"]


def test_the_stand_ins_take_what_compose_yaml_gives_the_official_images() -> None:
    entrypoint = (DOCKER / "test/mysql/docker-entrypoint.sh").read_text(encoding="utf-8")
    for name in environment("mysql"):
        if name.startswith("MYSQL_"):
            assert name in entrypoint, f"the mysql stand-in ignores {name}"
    assert "/docker-entrypoint-initdb.d" in entrypoint
    init_target = next(m.target for m in mounts("mysql") if m.bind)
    assert init_target.startswith("/docker-entrypoint-initdb.d/")
    kafka_health = healthcheck_text("kafka")
    script = re.search(r"(/opt/kafka/bin/\S+)", kafka_health)
    assert script, kafka_health
    assert (DOCKER / "test/kafka/bin" / PurePosixPath(script.group(1)).name).is_file()
    data = next(m.target for m in mounts("kafka") if not m.bind)
    assert environment("kafka")["KAFKA_LOG_DIRS"] == data
    assert data in (DOCKER / "test/kafka/Dockerfile").read_text(encoding="utf-8")


def test_the_readme_states_the_health_check_compose_yaml_runs() -> None:
    check = service(CDC)["healthcheck"]
    text = " ".join((DOCKER / "README.md").read_text(encoding="utf-8").split())
    seconds = {k: int(str(check[k]).rstrip("s")) for k in ("interval", "start_period")}
    stated = (f"every {seconds['interval']} s, unhealthy after {check['retries']} failures, "
              f"{seconds['start_period']} s start period")
    assert stated in text, f"docker/README.md should say: {stated}"


# ---------------------------------------------------------------- compose.secured-kafka.yaml

SECURED = DOCKER / "compose.secured-kafka.yaml"
SECURED_PIPELINE = DOCKER / "pipeline.secured-kafka.yaml"


class _ComposeTags(yaml.SafeLoader):
    """Compose's merge tags (``!override``, ``!reset``) read as the plain value they tag."""


def _tagged(loader: yaml.SafeLoader, node: yaml.Node) -> Any:
    if isinstance(node, yaml.MappingNode):
        return loader.construct_mapping(node, deep=True)
    if isinstance(node, yaml.SequenceNode):
        return loader.construct_sequence(node, deep=True)
    return loader.construct_scalar(node)  # type: ignore[arg-type]


for _tag in ("!override", "!reset"):
    _ComposeTags.add_constructor(_tag, _tagged)


def _secured() -> dict[str, Any]:
    return yaml.load(SECURED.read_text(), Loader=_ComposeTags)


def _readme_table(heading: str) -> list[list[str]]:
    text = (DOCKER / "README.md").read_text()
    section = text.split(f"## {heading}\n", 1)[1].split("\n## ", 1)[0]
    return [[cell.strip() for cell in line.strip("|").split("|")]
            for line in section.splitlines()
            if line.startswith("| `")]


def test_secured_kafka_override_documents_every_variable_and_default() -> None:
    used = {m.group(1): (m.group(2), m.group(3)) for m in _COMPOSE_VAR.finditer(SECURED.read_text())
            if m.group(1)}
    # the passwords: secrets from variables, which Compose requires to be set
    used |= {s["environment"]: (":?", "") for s in _secured()["secrets"].values()
             if "environment" in s}
    rows = _readme_table("A secured Kafka")
    documented = {name: row for row in rows for name in re.findall(r"`([A-Z_]+)`", row[0])}
    assert set(documented) == set(used)
    for name, (kind, default) in used.items():
        if kind == ":?":
            assert documented[name][2] == "required", name
        elif default:
            assert f"`{default}`" in documented[name][2], name


def test_secured_kafka_override_passes_every_secret_as_a_file() -> None:
    doc = _secured()
    cdc = doc["services"][CDC]
    assert "kafka" not in doc["services"] or doc["services"]["kafka"].get("profiles"), (
        "the stack's own Kafka must not start beside a Kafka of one's own")
    assert set(cdc["depends_on"]) == {"mysql"}
    assert not [v for v in cdc["environment"] if v.endswith("PASSWORD")]
    read = set(re.findall(r"/run/secrets/([a-z_]+)", SECURED_PIPELINE.read_text()))
    assert read == set(cdc["secrets"])
    assert read <= set(doc["secrets"]) | set(compose()["secrets"])
    mounted = [v.split(":")[:2] for v in cdc["volumes"]]
    assert ["./pipeline.secured-kafka.yaml", "/etc/cdc-ingest/pipeline.yaml"] in mounted
