"""deploy/docker-compose.yml (with deploy/Dockerfile) is a working stack as far as can be checked
without pulling images: `docker compose config` accepts it when docker compose is installed; else
(and also) the file is read here and its services checked — Valkey/Redis >= 7.2 started from the
shipped deploy/redis.conf with both placeholders replaced, the gateway and the projectors built from
the repository and running zhiyi commands its parser accepts, on one shared data volume, as the
`zhiyi` ACL user, with the env file the example describes, and setting only variables zhiyi reads.

The file is read with PyYAML when it is installed; otherwise with the small block-YAML reader below
(the subset the compose file is written in), which is checked against PyYAML wherever both exist."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from gateway.cli.main import parser
from tests.unit.test_deploy_env_example import compose_interpolated_names, example_assignments, settings_env_names

DEPLOY = Path(__file__).resolve().parents[2] / "deploy"
COMPOSE = DEPLOY / "docker-compose.yml"
PASSWORDS = {"REDIS_ZHIYI_PASSWORD": "0123abcd", "REDIS_REPLICA_PASSWORD": "4567ef01"}


# ----------------------------------------------------------------------------- a small YAML reader

def _scalar(text: str) -> Any:
    text = text.strip()
    if text.startswith('"') or text.startswith("["):
        return json.loads(text)          # double-quoted strings and flow lists of them: JSON
    if text.startswith("'"):
        return text[1:-1].replace("''", "'")
    if re.fullmatch(r"-?\d+", text):
        return int(text)
    return {"true": True, "false": False, "null": None, "~": None, "": None}.get(text, text)


def _strip_comment(line: str) -> str:
    quote = None
    for i, ch in enumerate(line):
        if quote:
            if ch == quote and line[i - 1] != "\\":
                quote = None
        elif ch in "\"'":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1] in " \t"):
            return line[:i].rstrip()
    return line.rstrip()


def read_yaml(text: str) -> Any:
    """Block mappings and sequences, plain/quoted scalars, JSON-like flow lists, `>-` folded scalars."""
    rows = [(len(line) - len(line.lstrip(" ")), line.strip()) for line in
            (_strip_comment(raw) for raw in text.splitlines()) if line.strip()]
    pos = 0

    def folded(indent: int) -> str:
        nonlocal pos
        parts = []
        while pos < len(rows) and rows[pos][0] > indent:
            parts.append(rows[pos][1])
            pos += 1
        return " ".join(parts)

    def value_after(rest: str, indent: int) -> Any:
        nonlocal pos
        if rest == ">-":
            return folded(indent)
        if rest:
            return _scalar(rest)
        if pos < len(rows) and (rows[pos][0] > indent or (rows[pos][0] == indent and rows[pos][1].startswith("- "))):
            return block(rows[pos][0])
        return None

    def block(indent: int) -> Any:
        nonlocal pos
        if rows[pos][1].startswith("- "):
            items = []
            while pos < len(rows) and rows[pos][0] == indent and rows[pos][1].startswith("- "):
                rest = rows[pos][1][2:].strip()
                pos += 1
                assert not re.match(r"[\w.-]+:( |$)", rest), "mappings inside sequences are not in the subset"
                items.append(value_after(rest, indent))
            return items
        mapping: dict[str, Any] = {}
        while pos < len(rows) and rows[pos][0] == indent and not rows[pos][1].startswith("- "):
            key, sep, rest = rows[pos][1].partition(":")
            assert sep and (not rest or rest.startswith(" ")), f"not a mapping line: {rows[pos][1]!r}"
            pos += 1
            mapping[key.strip()] = value_after(rest.strip(), indent)
        return mapping

    document = block(rows[0][0])
    assert pos == len(rows), f"not read: {rows[pos][1]!r}"
    return document


def interpolate(text: str, variables: dict[str, str]) -> str:
    """What compose does to the file: `${NAME...}` from the variables, `$$` a literal `$`."""
    return re.sub(r"\$\$|\$\{([A-Z][A-Z0-9_]*)[^}]*\}", lambda m: "$" if m.group(0) == "$$" else variables[m.group(1)],
                  text)


def load_compose() -> dict[str, Any]:
    text = interpolate(COMPOSE.read_text(), PASSWORDS)
    try:
        import yaml
    except ImportError:
        return read_yaml(text)
    return yaml.safe_load(text)


# ----------------------------------------------------------------------------- checks

def test_the_small_reader_reads_the_compose_file_as_yaml_does() -> None:
    yaml = pytest.importorskip("yaml", reason="PyYAML is not installed: the small reader is not cross-checked")
    text = interpolate(COMPOSE.read_text(), PASSWORDS)
    assert read_yaml(text) == yaml.safe_load(text)


def test_redis_runs_the_shipped_conf_with_the_passwords() -> None:
    compose = load_compose()
    assert set(compose["services"]) == {"redis", "zhiyi", "zhiyi-projectors"}
    redis = compose["services"]["redis"]
    image, _, tag = redis["image"].partition(":")
    major_minor = tuple(int(x) for x in re.findall(r"\d+", tag)[:2])
    assert (image == "valkey/valkey" and major_minor >= (8,)) or (image == "redis" and major_minor >= (7, 2)), \
        "a server with WAITAOF (durable mode)"
    mounts = {target: source for source, target, *_ in (v.split(":") for v in redis["volumes"])}
    conf_in_container = next(t for t, s in mounts.items() if s == "./redis.conf")
    assert (DEPLOY / "redis.conf").exists() and redis["volumes"][0].endswith(":ro")
    script = " ".join(redis["command"])
    assert conf_in_container in script
    conf = (DEPLOY / "redis.conf").read_text()
    for placeholder, variable in (("ZHIYI_PASSWORD", "REDIS_ZHIYI_PASSWORD"), ("REPLICA_PASSWORD", "REDIS_REPLICA_PASSWORD")):
        assert f">{placeholder} " in conf
        assert f"s/{placeholder}/${variable}/g" in script and redis["environment"][variable] == PASSWORDS[variable]
    assert re.search(r"^dir /", conf, re.M) and 's|^dir .*|dir /data|' in script, \
        "the conf's dir is the volume (the server changes into it while reading the file: it must exist)"
    port = re.search(r"--port (\d+)", script).group(1)   # type: ignore[union-attr]
    assert f"-p {port} --user zhiyi" in " ".join(redis["healthcheck"]["test"])
    assert "/data" in mounts and mounts["/data"] in compose["volumes"]
    assert "ports" not in redis, "Valkey is not published unless LAN replicas need it"


@pytest.mark.parametrize("name,command", [("zhiyi", "serve"), ("zhiyi-projectors", "project")])
def test_zhiyi_services_run_zhiyi_from_the_repository(name: str, command: str) -> None:
    compose = load_compose()
    service = compose["services"][name]
    assert (COMPOSE.parent / service["build"]["context"] / service["build"]["dockerfile"]).resolve() == \
        (DEPLOY / "Dockerfile").resolve()
    assert service["image"] == compose["services"]["zhiyi"]["image"]   # one image for both
    argv = service["command"]
    assert argv[:2] == ["zhiyi", command]
    args = parser().parse_args(argv[1:])
    data_dir = args.data_dir
    volume, target = service["volumes"][0].split(":")
    assert target == data_dir and volume in compose["volumes"]
    assert service["env_file"] == ".env" and (DEPLOY / ".env.example").exists()
    assert service["depends_on"]["redis"]["condition"] == "service_healthy"
    redis_port = re.search(r"--port (\d+)", " ".join(compose["services"]["redis"]["command"])).group(1)  # type: ignore[union-attr]
    assert service["environment"]["REDIS_URL"] == f"redis://zhiyi:{PASSWORDS['REDIS_ZHIYI_PASSWORD']}@redis:{redis_port}/0"
    assert set(service["environment"]) <= settings_env_names(), "only variables zhiyi reads"


def test_the_gateway_is_published_on_loopback_with_a_health_check() -> None:
    gateway = load_compose()["services"]["zhiyi"]
    port = str(parser().parse_args(gateway["command"][1:]).port)
    assert gateway["ports"] == [f"127.0.0.1:{port}:{port}"]   # nginx in front (deploy/nginx-zhiyi-tls.conf)
    assert f"http://127.0.0.1:{port}/health" in " ".join(gateway["healthcheck"]["test"])
    projectors = load_compose()["services"]["zhiyi-projectors"]
    assert projectors["volumes"][0] == gateway["volumes"][0], "the projections the gateway reads"


def test_the_dockerfile_installs_the_package_and_runs_zhiyi() -> None:
    text = (DEPLOY / "Dockerfile").read_text()
    assert re.search(r"^FROM python:3\.11-slim", text, re.M)
    copied = {m.split()[0] for m in re.findall(r"^COPY (?!--from)(.+?) \S+$", text, re.M) for m in m.split()}
    for package in ("events", "commands", "projections", "gateway", "replicas"):
        assert package in copied, f"{package}/ is not copied into the image"
    assert {"pyproject.toml", "README.md"} <= copied
    assert "pip install ." in text
    cmd = json.loads(re.search(r"^CMD (\[.*\])$", text, re.M).group(1))   # type: ignore[union-attr]
    assert cmd[0] == "zhiyi" and parser().parse_args(cmd[1:]).command == "serve"


def _docker_compose() -> list[str] | None:
    if shutil.which("docker") and subprocess.run(["docker", "compose", "version"], capture_output=True).returncode == 0:
        return ["docker", "compose"]
    return None


@pytest.mark.skipif(_docker_compose() is None, reason="docker compose is not installed")
def test_docker_compose_accepts_the_file(tmp_path: Path) -> None:
    """`docker compose config` on the file as it would be used: beside redis.conf and a .env made
    from the example (the passwords filled in). No image is pulled or built."""
    for name in ("docker-compose.yml", "redis.conf", "Dockerfile"):
        shutil.copy(DEPLOY / name, tmp_path / name)
    env = (DEPLOY / ".env.example").read_text()
    for variable, value in PASSWORDS.items():
        env = env.replace(f"\n{variable}=\n", f"\n{variable}={value}\n")
    (tmp_path / ".env").write_text(env)
    done = subprocess.run([*_docker_compose(), "-f", str(tmp_path / "docker-compose.yml"), "config", "-q"],  # type: ignore[misc]
                          capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert done.returncode == 0, done.stderr


def test_the_env_file_feeds_what_compose_interpolates() -> None:
    _, compose_only = example_assignments()
    assert compose_interpolated_names() == {name for name, _, _ in compose_only} == set(PASSWORDS)
