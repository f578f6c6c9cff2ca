"""Fuzz the HTTP API against its own OpenAPI document with schemathesis (pinned in the `bench` extra).

Starts `zhiyi up` on a temp data dir over a private redis-server, registers an agent, commits a
memory, then runs schemathesis against /api/v1/openapi.json twice — with the agent's key and with the
admin key — and prints, for each check, the number of failing operations:

    .venv/bin/pip install -e '.[bench]'     # schemathesis==4.32.5
    .venv/bin/python tests/bench/schemathesis_run.py [--examples 25] [--seed 20261203]

Checks: not_a_server_error, status_code_conformance, response_schema_conformance,
positive_data_acceptance, negative_data_rejection (phases examples, coverage, fuzzing; a fixed seed;
about two minutes on two cores). Exit status 1 when any count is not 0, or when schemathesis failed
without a failure this script could count.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from _harness import ROOT, private_redis, zhiyi_process

CHECKS = ("not_a_server_error", "status_code_conformance", "response_schema_conformance",
          "positive_data_acceptance", "negative_data_rejection")
ADMIN_KEY = "schemathesis-admin-key"
AGENT = "fuzzer"
# Valid requests may still meet the state: an unknown memory/agent (404), a moved version (409), the
# Idempotency-Key a previous case used with another body, a graph query outside the grammar, an
# `after` beyond the log's end (422). 422 never answers a schema violation here (those are 400), so it
# counts as acceptance.
CONFIG = """[checks.positive_data_acceptance]
expected-statuses = ["2xx", "401", "403", "404", "409", "422"]
"""
# The admin key must name the agent it writes for (agent_id: 400 agent_id_required otherwise), a
# rule of the key, not of the document: the admin run covers the reads and the admin operations.
ADMIN_SKIPS = r"^/api/v1/(commit|batch-commit|feedback/.*|distilled/.*)$"


def _post(base: str, path: str, key: str, body: dict) -> dict:
    req = urllib.request.Request(base + path, data=json.dumps(body).encode(), method="POST",
                                 headers={"X-API-Key": key, "Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.load(resp)


def _schemathesis() -> str:
    exe = Path(sys.executable).with_name("schemathesis")
    if not exe.exists():
        raise SystemExit("schemathesis is not installed: pip install -e '.[bench]'")
    return str(exe)


def run_one(base: str, key: str, label: str, examples: int, seed: int, out_dir: Path) -> dict[str, int]:
    """One schemathesis run with `key`; failing operations per check (from the ndjson event report)."""
    report = out_dir / f"{label}.ndjson"
    config = out_dir / "schemathesis.toml"
    config.write_text(CONFIG)
    skips = ["--exclude-path-regex", ADMIN_SKIPS] if label == "admin" else []
    cmd = [_schemathesis(), "--config-file", str(config), "run", *skips, f"{base}/api/v1/openapi.json", "--url", base,
           "--checks", ",".join(CHECKS), "--seed", str(seed), "--max-examples", str(examples),
           "--phases", "examples,coverage,fuzzing", "--workers", "1", "--no-shrink",
           "--header", f"X-API-Key: {key}", "--report", "ndjson", "--report-ndjson-path", str(report),
           "--request-timeout", "30", "--suppress-health-check", "all", "--continue-on-failure"]
    started = time.monotonic()
    proc = subprocess.run(cmd, cwd=out_dir, env=dict(os.environ, NO_COLOR="1"), capture_output=True, text=True)
    (out_dir / f"{label}.log").write_text(proc.stdout + proc.stderr)
    counts = {check: 0 for check in CHECKS}
    failing: dict[str, set[str]] = {check: set() for check in CHECKS}
    for line in report.read_text().splitlines() if report.exists() else []:
        _collect(json.loads(line), failing)
    for check, operations in failing.items():
        counts[check] = len(operations)
    if proc.returncode != 0 and not any(counts.values()):
        # an error the report does not show as a check failure (a crash, a network error): look at the log
        print(f"[{label}] schemathesis exited {proc.returncode} without a check failure", flush=True)
        counts["errors"] = 1
    print(f"[{label}] {time.monotonic() - started:.0f} s, schemathesis exit {proc.returncode}; "
          f"log {out_dir / (label + '.log')}", flush=True)
    for check in CHECKS:
        print(f"[{label}]   {check}: {counts[check]}" +
              (f"  ({', '.join(sorted(failing[check]))})" if failing[check] else ""), flush=True)
    return counts


def _collect(event: dict, failing: dict[str, set[str]]) -> None:
    """Walk one ndjson event for failed check results: {"name": check, "status": "failure", ...}."""
    stack = [(event, "")]
    while stack:
        node, label = stack.pop()
        if isinstance(node, dict):
            label = node.get("label") or label
            name, status = node.get("name"), node.get("status")
            if name in failing and str(status).lower().endswith("failure"):
                failing[name].add(label or "?")
            stack.extend((v, label) for v in node.values())
        elif isinstance(node, list):
            stack.extend((v, label) for v in node)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--examples", type=int, default=25, help="max examples per operation and phase")
    ap.add_argument("--seed", type=int, default=20261203)
    ap.add_argument("--keep", default=None, help="write the reports here (default: a temp dir, printed)")
    args = ap.parse_args()
    out_dir = Path(args.keep or tempfile.mkdtemp(prefix="zhiyi-schemathesis-"))
    out_dir.mkdir(parents=True, exist_ok=True)
    totals = {check: 0 for check in (*CHECKS, "errors")}
    with private_redis(aof=False) as redis_url, tempfile.TemporaryDirectory(prefix="zhiyi-st-data-") as data, \
            zhiyi_process("up", redis_url, Path(data), ADMIN_KEY,
                          {"ZHIYI_TICK_INTERVAL_S": "0", "PYTHONPATH": str(ROOT)}) as base:
        agent_key = _post(base, "/api/v1/agents/register", ADMIN_KEY, {"agent_id": AGENT})["api_key"]
        _post(base, "/api/v1/commit", agent_key, {"content": "schemathesis seed memory", "tags": ["fuzz"]})
        for label, key in (("agent", agent_key), ("admin", ADMIN_KEY)):
            for check, n in run_one(base, key, label, args.examples, args.seed, out_dir).items():
                totals[check] += n
    if not totals["errors"]:
        del totals["errors"]
    print("failing operations per check (agent + admin):")
    for check, n in totals.items():
        print(f"  {check}: {n}")
    return 1 if any(totals.values()) else 0


if __name__ == "__main__":
    sys.exit(main())
