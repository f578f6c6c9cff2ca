"""`zhiyi tick`: one scheduler run now (the 7-day quality deadline, the 180-day stale rule, a forget
run), in-process against the live data dir and the log, like `zhiyi eval`. The projections must be
up to date, so a running `zhiyi up` (or `zhiyi project`) is needed; exit 2 when they lag."""

from __future__ import annotations

import argparse
import dataclasses
from typing import Any, TextIO

import orjson

from gateway.process.settings import Settings

WAIT_S = 30.0


def add_tick_parser(subparsers: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:
    tp = subparsers.add_parser("tick", parents=parents,
                               help="run the scheduler once now: quality deadline, stale rule, forget run")
    tp.add_argument("--dry-run", action="store_true", help="print what it would decide, append nothing")
    tp.add_argument("--capacity", type=int, default=None, help="forget-run capacity per namespace "
                    "(default ZHIYI_FORGET_CAPACITY)")
    tp.add_argument("--json", action="store_true")


def _pruned(plan) -> dict[str, int]:
    return {"removed_nodes": len(plan.removed_nodes), "removed_edges": len(plan.removed_edges),
            "archived_edges": len(plan.archived_edges), "merged_edges": len(plan.merged_edges)}


async def run_tick_command(args: argparse.Namespace, settings: Settings, out: TextIO, err: TextIO) -> int:
    from commands.scheduler import SchedulerLag
    from events.hlc import iso_from_ms
    from gateway.process.wiring import open_services
    from projections.core.epoch import open_projections_epoch

    if args.capacity is not None and args.capacity < 1:
        print("zhiyi tick: --capacity must be >= 1", file=err)
        return 2
    # the scheduler waits for the projections as long as a command may (the gateway's wait is shorter)
    async with open_services(dataclasses.replace(settings, projection_wait_s=WAIT_S)) as services:
        try:
            await open_projections_epoch(services.store, settings.data_dir)  # a wiped log: refused, not restarted
            report = await services.scheduler.tick(dry_run=args.dry_run, capacity=args.capacity)
        except SchedulerLag as exc:
            print(f"zhiyi tick: the projections have not reached {exc.position} in {WAIT_S:.0f} s "
                  "(is `zhiyi up` running?)", file=err)
            return 2
    doc: dict[str, Any] = {"now": iso_from_ms(report.now_ms), "dry_run": report.dry_run, "position": report.position,
           "deprecated": [d.memory_id for d in report.deprecated],
           "downweighted": [d.memory_id for d in report.downweighted],
           "forgotten": [{"memory_id": c.memory_id, "reason": c.reason} for c in report.forgotten],
           "pruned": _pruned(report.pruned)}
    if args.json:
        out.write(orjson.dumps(doc).decode() + "\n")
    else:
        verb = "would decide" if report.dry_run else "decided"
        print(f"tick at {doc['now']} {verb}: {len(report.deprecated)} deprecated, {len(report.downweighted)} "
              f"down-weighted, {len(report.forgotten)} forgotten" + (f" (position {report.position})"
                                                                   if report.position else ""), file=out)
        for c in report.forgotten:
            print(f"  forgotten {c.memory_id} ({c.reason})", file=out)
        p = doc["pruned"]
        print(f"  graph: {p['removed_nodes']} nodes and {p['removed_edges']} edges removed, "
              f"{p['archived_edges']} archived, {p['merged_edges']} merged", file=out)
    return 0
