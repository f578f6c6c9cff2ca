"""`zhiyi tick`: one scheduler run now (the 7-day quality deadline, the 180-day stale rule, a forget
run), in-process against the live data dir and the log, like `zhiyi eval`. The projections must be
up to date, so a running `zhiyi up` (or `zhiyi project`) is needed; exit 2 when they lag."""

from __future__ import annotations

import argparse
from typing import TextIO

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
    from commands.handlers import CommandService
    from commands.scheduler import Scheduler, SchedulerLag
    from events.clock import SystemClock
    from events.hlc import iso_from_ms
    from events.redis.client import connect
    from events.redis.store import EventStore
    from projections.activity.reader import ActivityReader
    from projections.graph.reader import GraphReader
    from projections.memories.reader import MemoriesReader
    from projections.core.epoch import open_projections_epoch
    from projections.core.registry import projection_dir
    from projections.core.waiter import CheckpointWaiter

    if args.capacity is not None and args.capacity < 1:
        print("zhiyi tick: --capacity must be >= 1", file=err)
        return 2
    redis = connect(settings.redis_url)
    store = EventStore(redis, origin=settings.instance_id)
    reader = MemoriesReader(projection_dir(settings.data_dir, "memories"))
    activity = ActivityReader(projection_dir(settings.data_dir, "activity"))
    graph = GraphReader(projection_dir(settings.data_dir, "graph"))
    scheduler = Scheduler(store, CommandService(store, settings.limits), reader, activity, CheckpointWaiter(store),
                          SystemClock(), graph=graph, capacity=settings.forget_capacity, wait_s=WAIT_S)
    try:
        await open_projections_epoch(store, settings.data_dir)  # a wiped log: refused (log_reset), not restarted
        report = await scheduler.tick(dry_run=args.dry_run, capacity=args.capacity)
    except SchedulerLag as exc:
        print(f"zhiyi tick: the projections have not reached {exc.position} in {WAIT_S:.0f} s "
              "(is `zhiyi up` running?)", file=err)
        return 2
    finally:
        reader.close()
        activity.close()
        graph.close()
        await redis.aclose()
    doc = {"now": iso_from_ms(report.now_ms), "dry_run": report.dry_run, "position": report.position,
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
