"""`zhiyi triggers` and `zhiyi consolidate`: the eight triggers' state (seed 6.4), or one deep
consolidation run now (seed 3.5 flow 5), in-process against the live data dir and the log, like
`zhiyi tick`. The projections must be up to date, so a running `zhiyi up` is needed; exit 2 when they
lag. The clock is the system clock."""

from __future__ import annotations

import argparse
import dataclasses
from typing import TextIO

import orjson

from gateway.process.settings import Settings

WAIT_S = 60.0


def add_consolidation_parsers(subparsers: argparse._SubParsersAction,
                              parents: list[argparse.ArgumentParser]) -> None:
    tp = subparsers.add_parser("triggers", parents=parents,
                               help="the eight triggers: condition, cooldown, urgency, last firing, paused")
    tp.add_argument("--json", action="store_true")
    cp = subparsers.add_parser("consolidate", parents=parents,
                               help="run deep consolidation now: clusters, prune, calibration, backtrace, patterns")
    cp.add_argument("--json", action="store_true")


async def run_triggers_command(args: argparse.Namespace, settings: Settings, out: TextIO, err: TextIO) -> int:
    from commands.triggers.service import TriggerLag
    from gateway.process.wiring import open_services
    from projections.core.epoch import open_projections_epoch

    async with open_services(dataclasses.replace(settings, projection_wait_s=WAIT_S), origin="cli") as services:
        try:
            await open_projections_epoch(services.store, settings.data_dir)
            entries = await services.triggers.entries()
        except TriggerLag as exc:
            print(f"zhiyi triggers: {exc} (is `zhiyi up` running?)", file=err)
            return 2
    if args.json:
        out.write(orjson.dumps({"triggers": entries}).decode() + "\n")
        return 0
    print(f"{'trigger':<14}{'urgency':>8}  {'cooldown':>9}  {'last fired':<25}state", file=out)
    for t in entries:
        state = "paused" if t["paused"] else "disabled" if t["disabled"] else "due" if t["due"] else \
            "cooling" if t["cooling_until"] else "waiting"
        print(f"{t['name']:<14}{t['urgency']:>8.2f}  {t['cooldown_s']:>8}s  {t['last_fired_at'] or '-':<25}"
              f"{state}: {t['reason']}" + (f" (failures {t['failures']})" if t["failures"] else ""), file=out)
    return 0


async def run_consolidate_command(args: argparse.Namespace, settings: Settings, out: TextIO, err: TextIO) -> int:
    from commands.consolidation.service import ConsolidationLag
    from gateway.process.wiring import open_services
    from projections.core.epoch import open_projections_epoch

    async with open_services(dataclasses.replace(settings, projection_wait_s=WAIT_S), origin="cli") as services:
        try:
            await open_projections_epoch(services.store, settings.data_dir)
            run = await services.consolidation.run(trigger="manual")
        except ConsolidationLag as exc:
            print(f"zhiyi consolidate: {exc} (is `zhiyi up` running?)", file=err)
            return 2
    if args.json:
        out.write(orjson.dumps(run).decode() + "\n")
        return 0
    r = run["report"]
    print(f"consolidation {run['run_id']} (position {run['position']}): {r['memories']} memories, "
          f"{r['clusters_found']} clusters, {r['patterns_written']} patterns, {r['rates_calibrated']} rates "
          f"calibrated, {r['duration_ms']} ms", file=out)
    for s in run["steps"]:
        print(f"  {s['step']:<12}{s['status']:<9}{s['error'] or ''}", file=out)
    for regression in r["regressions"]:
        print(f"  regression: {regression}", file=out)
    return 0
