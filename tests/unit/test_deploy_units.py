"""The shipped systemd units and nginx sites are valid: every `deploy/*.service` runs a zhiyi command
that exists with arguments its parser accepts (or deploy/zhiyi-upstream.py with arguments its parser
accepts); the units follow the same rules (user, restart, hardening, one writable path);
`systemd-analyze verify` accepts every unit and timer when it is installed; `nginx -t` accepts both
nginx sites (placeholders replaced, a self-signed certificate) when nginx and openssl are installed."""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import io
import re
import shlex
import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from gateway.cli.main import parser

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
UNITS = sorted(DEPLOY.glob("*.service")) + sorted(DEPLOY.glob("*.timer"))
SERVICES = [u for u in UNITS if u.suffix == ".service"]
ZHIYI_BIN = "/opt/zhiyi/.venv/bin/zhiyi"
UPSTREAM_SCRIPT = "/opt/zhiyi/deploy/zhiyi-upstream.py"
ZHIYI_SERVERS = ("zhiyi-gateway.service", "zhiyi-projectors.service", "zhiyi-replica.service", "zhiyi-backup.service")
HARDENING = {"NoNewPrivileges": "yes", "ProtectSystem": "strict", "ProtectHome": "yes", "PrivateTmp": "yes",
             "PrivateDevices": "yes", "RestrictSUIDSGID": "yes", "CapabilityBoundingSet": ""}


def parse_unit(path: Path) -> dict[str, dict[str, list[str]]]:
    """{section: {key: [values, in order]}}: systemd's syntax (comments, `\\` continuations, repeated keys)."""
    sections: dict[str, dict[str, list[str]]] = {}
    current: dict[str, list[str]] | None = None
    pending = ""
    for raw in path.read_text().splitlines():
        line = pending + raw.strip() if pending else raw.strip()
        pending = ""
        if line.endswith("\\"):
            pending = line[:-1].rstrip() + " "
            continue
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            current = sections.setdefault(line[1:-1], {})
            continue
        assert current is not None, f"{path.name}: {line!r} outside a section"
        key, sep, value = line.partition("=")
        assert sep, f"{path.name}: not a key=value line: {line!r}"
        current.setdefault(key.strip(), []).append(value.strip())
    assert not pending, f"{path.name}: ends with a continuation"
    return sections


def _upstream_parser():
    spec = importlib.util.spec_from_file_location("zhiyi_upstream", DEPLOY / "zhiyi-upstream.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.parser()


@pytest.mark.parametrize("unit", SERVICES, ids=lambda p: p.name)
def test_every_service_runs_a_command_that_exists(unit: Path) -> None:
    execs = parse_unit(unit)["Service"]["ExecStart"]
    assert execs
    for line in execs:
        argv = shlex.split(line.lstrip("-"))
        if argv[0] == ZHIYI_BIN:
            command = argv[1]
            commands = next(a.choices for a in parser()._actions if isinstance(a, argparse._SubParsersAction))
            if command not in commands:
                pytest.fail(f"{unit.name}: `zhiyi {command}` is not a zhiyi command ({', '.join(sorted(commands))})")
            try:
                with contextlib.redirect_stderr(io.StringIO()) as err:
                    parser().parse_args(argv[1:])
            except SystemExit:
                pytest.fail(f"{unit.name}: zhiyi refuses the arguments {argv[1:]}: {err.getvalue().strip()}")
        elif argv[:2] == ["/usr/bin/python3", UPSTREAM_SCRIPT]:
            try:
                _upstream_parser().parse_args(argv[2:])
            except SystemExit:
                pytest.fail(f"{unit.name}: zhiyi-upstream.py refuses the arguments {argv[2:]}")
        else:
            pytest.fail(f"{unit.name}: runs {argv[0]}, neither zhiyi nor deploy/zhiyi-upstream.py")


@pytest.mark.parametrize("name", ZHIYI_SERVERS)
def test_zhiyi_units_run_as_zhiyi_hardened_with_one_writable_path(name: str) -> None:
    service = parse_unit(DEPLOY / name)["Service"]
    one = {key: values[-1] for key, values in service.items()}
    assert one["User"] == one["Group"] == "zhiyi"
    assert service["EnvironmentFile"][0].lstrip("-").startswith("/etc/zhiyi/")
    assert {k: one.get(k) for k in HARDENING} == HARDENING
    data_dir = "/var/lib/" + one["StateDirectory"]
    assert one["ReadWritePaths"] == data_dir and one["UMask"] == "0077"
    for line in service["ExecStart"]:
        assert f"--data-dir {data_dir}" in line, line
    if one["Type"] == "oneshot":
        assert name == "zhiyi-backup.service"
    else:
        assert one["Restart"] == "on-failure" and one["KillMode"] == "mixed"


def test_the_gateway_and_its_projectors_share_the_data_dir_and_start_together() -> None:
    gateway, projectors = (parse_unit(DEPLOY / f"zhiyi-{n}.service") for n in ("gateway", "projectors"))
    assert "zhiyi-projectors.service" in gateway["Unit"]["Wants"][0].split()
    assert gateway["Service"]["StateDirectory"] == projectors["Service"]["StateDirectory"] == ["zhiyi"]
    assert "--host 127.0.0.1 --port 7821" in gateway["Service"]["ExecStart"][0]   # nginx in front


def test_the_backup_timer_runs_daily_and_catches_up() -> None:
    timer = parse_unit(DEPLOY / "zhiyi-backup.timer")
    assert timer["Timer"]["OnCalendar"] == ["daily"] and timer["Timer"]["Persistent"] == ["true"]
    assert timer["Install"]["WantedBy"] == ["timers.target"]
    backup = parse_unit(DEPLOY / "zhiyi-backup.service")["Service"]["ExecStart"]
    assert [shlex.split(line)[1:3] for line in backup] == [["backup", "--data-dir"], ["backup", "--prune"]]


@pytest.mark.skipif(shutil.which("systemd-analyze") is None, reason="systemd-analyze is not installed")
def test_systemd_analyze_verify_accepts_every_unit(tmp_path: Path) -> None:
    """The units as they would be installed, except for where zhiyi lives: this checkout's."""
    zhiyi = Path(sys.executable).with_name("zhiyi")
    if not zhiyi.exists():
        pytest.skip(f"no zhiyi entry point beside {sys.executable} (pip install -e .)")
    for unit in UNITS:
        text = unit.read_text().replace(ZHIYI_BIN, str(zhiyi)).replace(UPSTREAM_SCRIPT, str(DEPLOY / "zhiyi-upstream.py"))
        (tmp_path / unit.name).write_text(text)
    names = [str(tmp_path / unit.name) for unit in UNITS]
    done = subprocess.run(["systemd-analyze", "verify", "--man=no", *names], capture_output=True, text=True,
                          timeout=60)
    ours = [line for line in (done.stdout + done.stderr).splitlines()
            if str(tmp_path) in line or any(line.startswith(u.name) for u in UNITS)]
    assert done.returncode == 0 and ours == [], done.stdout + done.stderr


# ----------------------------------------------------------------------------- nginx

NGINX_SITES = {
    "nginx-zhiyi-tls.conf": {"zhiyi.example.com": "localhost"},
    "nginx-zhiyi.conf": {},
}


@pytest.fixture(scope="module")
def certificate(tmp_path_factory) -> tuple[Path, Path]:
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed (a self-signed certificate is needed for nginx -t)")
    where = tmp_path_factory.mktemp("tls")
    cert, key = where / "fullchain.pem", where / "privkey.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1",
                    "-nodes", "-days", "1", "-subj", "/CN=localhost", "-keyout", str(key), "-out", str(cert)],
                   check=True, capture_output=True, timeout=60)
    return cert, key


def _free_port(family: int = socket.AF_INET, host: str = "127.0.0.1") -> int:
    with socket.socket(family) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _ipv6() -> bool:
    try:
        _free_port(socket.AF_INET6, "::1")
    except OSError:
        return False
    return True


def _local_listens(text: str) -> str:
    """`nginx -t` binds every `listen`: each on a free loopback port instead (80 and 443 need root and
    may be taken); the IPv6 ones on ::1, or left out where the machine has no IPv6."""
    lines = []
    for line in text.splitlines():
        found = re.match(r"(\s*listen )(\[::\]:)?\d+(.*)", line)
        if found and found.group(2):
            if not _ipv6():
                continue
            line = f"{found.group(1)}[::1]:{_free_port(socket.AF_INET6, '::1')}{found.group(3)}"
        elif found:
            line = f"{found.group(1)}127.0.0.1:{_free_port()}{found.group(3)}"
        lines.append(line)
    return "\n".join(lines) + "\n"


@pytest.mark.skipif(shutil.which("nginx") is None, reason="nginx is not installed")
@pytest.mark.parametrize("site", sorted(NGINX_SITES))
def test_nginx_accepts_the_site(site: str, tmp_path: Path, certificate: tuple[Path, Path]) -> None:
    """`nginx -t` on a main configuration of the test's own that includes the site inside `http`, as
    /etc/nginx/nginx.conf includes conf.d/*.conf (ports, paths and the upstream file made local)."""
    cert, key = certificate
    text = (DEPLOY / site).read_text()
    for placeholder, value in NGINX_SITES[site].items():
        text = text.replace(placeholder, value)
    text = text.replace("/etc/ssl/zhiyi/fullchain.pem", str(cert)).replace("/etc/ssl/zhiyi/privkey.pem", str(key))
    upstream = tmp_path / "zhiyi-upstream.conf"   # what zhiyi-upstream.py writes
    upstream.write_text("server 127.0.0.1:7821 max_fails=2 fail_timeout=10s;\n")
    text = text.replace("/etc/nginx/zhiyi-upstream.conf", str(upstream))
    assert "/etc/" not in re.sub(r"#.*", "", text), "a path the test did not make local"
    text = _local_listens(text)
    (tmp_path / "site.conf").write_text(text)
    (tmp_path / "logs").mkdir()
    main = tmp_path / "nginx.conf"
    main.write_text(f"""
pid {tmp_path}/nginx.pid;
error_log {tmp_path}/logs/error.log;
events {{}}
http {{
    access_log off;
    client_body_temp_path {tmp_path}/client_body;
    proxy_temp_path {tmp_path}/proxy;
    fastcgi_temp_path {tmp_path}/fastcgi;
    uwsgi_temp_path {tmp_path}/uwsgi;
    scgi_temp_path {tmp_path}/scgi;
    include {tmp_path}/site.conf;
}}
""")
    done = subprocess.run(["nginx", "-t", "-q", "-p", str(tmp_path), "-e", str(tmp_path / "logs" / "error.log"),
                           "-c", str(main)], capture_output=True,
                          text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "[emerg]" not in done.stderr and "[error]" not in done.stderr, done.stderr
