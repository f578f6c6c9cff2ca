#!/usr/bin/env python3
"""Keep nginx's `upstream zhiyi_read` in step with the zhiyi instances that are up.

Asks the primary for `GET /api/v1/instances` (admin key in `X-API-Key`), keeps the gateways and
replicas whose status is `up` and that advertise a `url`, and writes one line per instance::

    server 10.0.0.5:7821 max_fails=2 fail_timeout=10s;

to `--output` (the file `deploy/nginx-zhiyi.conf` includes inside the upstream block). The file is
replaced atomically (a temporary file renamed over it) and only when its content changes; then
`--reload-command` runs (default `nginx -s reload`). An upstream is never emptied: when no instance
is up (or the primary cannot be asked) the old file is kept and the exit status is 1, so nginx keeps
what it had. `deploy/zhiyi-upstream.timer` runs this every 15 s.

Only the Python 3 standard library is used: copy this file anywhere, e.g.

    ZHIYI_ADMIN_KEY=... ./zhiyi-upstream.py --primary http://10.0.0.5:7821 --output /tmp/up.conf --reload-command ''
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import urllib.error
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

SERVING_ROLES = ("gateway", "replica")
SERVER_OPTIONS = "max_fails=2 fail_timeout=10s"
DEFAULT_OUTPUT = "/etc/nginx/zhiyi-upstream.conf"
DEFAULT_RELOAD = "nginx -s reload"
HEADER = "# written by zhiyi-upstream.py from GET /api/v1/instances: edits are overwritten\n"


class UpstreamError(Exception):
    """Something the operator must see; the upstream file is left as it was."""


def host_port(url: str) -> str:
    """`host:port` of an advertised base URL (`http://10.0.0.5:7821` -> `10.0.0.5:7821`); the
    scheme's port when the URL names none, IPv6 addresses in brackets."""
    parts = urllib.parse.urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ValueError(f"not an http(s) URL: {url!r}")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    host = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    return f"{host}:{port}"


def upstream_lines(instances: list[dict[str, Any]]) -> list[str]:
    """The `server` lines for the instances that can take requests: status `up`, role gateway or
    replica, an advertised `url`. Sorted, without duplicates; an unusable URL is skipped."""
    addresses = set()
    for instance in instances:
        if instance.get("status") != "up" or instance.get("role") not in SERVING_ROLES:
            continue
        url = instance.get("url")
        if not isinstance(url, str) or not url:
            continue
        try:
            addresses.add(host_port(url))
        except ValueError:
            print(f"zhiyi-upstream: skipping instance {instance.get('instance_id')!r}: {url!r} is not an "
                  "http(s) URL", file=sys.stderr)
    return sorted(f"server {address} {SERVER_OPTIONS};" for address in addresses)


def write_if_changed(path: Path | str, text: str) -> bool:
    """Replace `path` with `text` atomically (a temporary file in the same directory, renamed over
    it); True when it changed, False (the file untouched) when it already held `text`."""
    target = Path(path)
    try:
        if target.read_text() == text:
            return False
    except FileNotFoundError:
        pass
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with os.fdopen(fd, "w") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, target)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    return True


def read_api_key(key_file: str | None) -> str:
    """The admin key: the first line of `--api-key-file`, else $ZHIYI_ADMIN_KEY."""
    if key_file:
        try:
            key = Path(key_file).read_text().strip()
        except OSError as exc:
            raise UpstreamError(f"cannot read the admin key from {key_file}: {exc}") from None
    else:
        key = os.environ.get("ZHIYI_ADMIN_KEY", "").strip()
    if not key:
        raise UpstreamError("no admin key: pass --api-key-file FILE or set ZHIYI_ADMIN_KEY")
    return key


def fetch_instances(primary: str, api_key: str, timeout_s: float) -> list[dict[str, Any]]:
    """`GET {primary}/api/v1/instances` -> its `instances` list."""
    url = primary.rstrip("/") + "/api/v1/instances"
    request = urllib.request.Request(url, headers={"X-API-Key": api_key, "Accept": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            body = json.load(response)
    except urllib.error.HTTPError as exc:
        raise UpstreamError(f"GET {url}: HTTP {exc.code} {exc.reason}") from None
    except (urllib.error.URLError, OSError) as exc:
        raise UpstreamError(f"GET {url}: {getattr(exc, 'reason', exc)}") from None
    except ValueError as exc:
        raise UpstreamError(f"GET {url}: not JSON ({exc})") from None
    instances = body.get("instances") if isinstance(body, dict) else None
    if not isinstance(instances, list):
        raise UpstreamError(f"GET {url}: no `instances` list in the answer")
    return [i for i in instances if isinstance(i, dict)]


def reload_nginx(command: str) -> None:
    """Run the reload command (nothing when it is empty)."""
    argv = shlex.split(command)
    if not argv:
        return
    try:
        done = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise UpstreamError(f"{command!r} failed: {exc}") from None
    if done.returncode != 0:
        raise UpstreamError(f"{command!r} exited {done.returncode}: {(done.stderr or done.stdout).strip()}")


def update(args: argparse.Namespace) -> bool:
    """One pass; True when the file changed and nginx was reloaded."""
    instances = fetch_instances(args.primary, read_api_key(args.api_key_file), args.timeout)
    lines = upstream_lines(instances)
    if not lines:
        raise UpstreamError(f"no gateway or replica is up with an advertised url ({len(instances)} instances "
                            f"listed): {args.output} is kept as it is")
    output = Path(args.output)
    previous = output.read_text() if output.exists() else None
    if not write_if_changed(output, HEADER + "\n".join(lines) + "\n"):
        return False
    try:
        reload_nginx(args.reload_command)
    except UpstreamError:
        if previous is not None:        # back to what nginx runs with, so the next run tries again
            write_if_changed(output, previous)
        raise
    return True


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description="write nginx upstream servers from zhiyi's GET /api/v1/instances")
    p.add_argument("--primary", default=os.environ.get("ZHIYI_PRIMARY", "http://127.0.0.1:7821"),
                   help="the primary's base URL (default $ZHIYI_PRIMARY, else http://127.0.0.1:7821)")
    p.add_argument("--api-key-file", default=None, help="file holding the admin key (else $ZHIYI_ADMIN_KEY)")
    p.add_argument("--output", default=DEFAULT_OUTPUT, help=f"upstream servers file (default {DEFAULT_OUTPUT})")
    p.add_argument("--reload-command", default=DEFAULT_RELOAD,
                   help=f"run after the file changed (default {DEFAULT_RELOAD!r}; '' runs nothing)")
    p.add_argument("--timeout", type=float, default=5.0, help="HTTP timeout in seconds (default 5)")
    return p


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        changed = update(args)
    except UpstreamError as exc:
        print(f"zhiyi-upstream: {exc}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"zhiyi-upstream: cannot write {args.output}: {exc}", file=sys.stderr)
        return 1
    if changed:
        ran = f", ran {args.reload_command!r}" if args.reload_command.strip() else ""
        print(f"zhiyi-upstream: {args.output} updated{ran}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
