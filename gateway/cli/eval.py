"""`zhiyi eval run|generate|history`: the evaluation framework (seed 6.1) from the command line.

Works in-process against the live data dir and the log, like `zhiyi digest`: it opens the services
through the same wiring as the gateway (`gateway.process.wiring`), so it recalls with the same
`RecallService` (over `<data-dir>/projections/memories`) and the same `EvalService`, acting with the
admin's rights. `eval run` exits 1 when the run regressed (recall@5 more than 0.05 below the previous
run), so it can gate a deployment.
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any, TextIO

import orjson

from gateway.process.settings import Settings

if TYPE_CHECKING:
    from gateway.process.wiring import Services

CATCH_UP_S = 10.0
MAX_GENERATED = 200  # commands.evaluation.MAX_GENERATED (not imported: the parser stays light)


def _bounded(lo: int, hi: int):
    def parse(text: str) -> int:
        try:
            n = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"invalid int value: {text!r}") from None
        if not lo <= n <= hi:
            raise argparse.ArgumentTypeError(f"must be in {lo}..{hi}")
        return n

    return parse


def add_eval_parser(subparsers: argparse._SubParsersAction, parents: list[argparse.ArgumentParser]) -> None:
    ev = subparsers.add_parser("eval", help="evaluate recall quality (golden sets, IR metrics, history)")
    sub = ev.add_subparsers(dest="eval_command", metavar="{run,generate,history}", required=True)
    run = sub.add_parser("run", parents=parents, help="run the latest (or a named) golden set through recall")
    run.add_argument("--top-k", type=_bounded(1, 100), default=5, metavar="K", help="results per query (5)")
    run.add_argument("--golden-set", dest="golden_set_id", default=None, help="golden set id (default: the latest)")
    run.add_argument("--namespace", default=None, help="search only this namespace")
    run.add_argument("--json", action="store_true")
    gen = sub.add_parser("generate", parents=parents, help="build a rule-based golden set from stored memories")
    gen.add_argument("--n", type=_bounded(1, MAX_GENERATED), default=12, metavar="N",
                     help="number of queries (12 = 4 kinds x 3 difficulties)")
    gen.add_argument("--seed", type=int, default=None, help="sampling seed (default: from the log position)")
    gen.add_argument("--namespace", default=None, help="only memories of this namespace")
    gen.add_argument("--json", action="store_true")
    hist = sub.add_parser("history", parents=parents, help="evaluation runs, newest first, with the trend")
    hist.add_argument("--limit", type=_bounded(1, 1000), default=20, metavar="N")
    hist.add_argument("--json", action="store_true")


async def _caught_up(services: Services, out: TextIO) -> None:
    last = await services.store.last_position()
    if last and not await services.waiter.wait(["memories"], last, CATCH_UP_S):
        print(f"zhiyi eval: warning: the memories projection has not reached {last}; "
              "results reflect an older state (is `zhiyi up`/`zhiyi project` running?)", file=out)


def _print_report(report: dict[str, Any], out: TextIO) -> None:
    print(f"golden set {report['golden_set_id'] or '-'}: {report['queries']} queries, top_k={report['top_k']}, "
          f"position {report['position']}", file=out)
    for name in ("recall_at_5", "precision_at_5", "mean_reciprocal_rank"):
        print(f"  {name:<22} {report[name]:.3f}", file=out)
    for title, key in (("by tag", "recall_at_5_by_tag"), ("by agent", "recall_by_agent")):
        if report[key]:
            print(f"  recall@5 {title}: " + ", ".join(f"{k}={v:.2f}" for k, v in report[key].items()), file=out)
    for d in report["query_details"]:
        mark = "ok  " if not d["misses"] else "MISS"
        print(f"  {mark} r@5={d['recall_at_5']:.2f} {d.get('tag', ''):<13} {d['query'][:70]}", file=out)


def _print_history(data: dict[str, Any], out: TextIO) -> None:
    for r in data["runs"]:
        m = r["metrics"]
        print(f"{r['position']:<22} {r['timestamp']}  r@5={m.get('recall_at_5', 0):.3f} "
              f"p@5={m.get('precision_at_5', 0):.3f} mrr={m.get('mean_reciprocal_rank', 0):.3f} "
              f"queries={r['queries']} golden={r['golden_set_id'] or '-'}", file=out)
    if data["delta"] is not None:
        print("delta (newest - previous): " + ", ".join(f"{k}={v:+.3f}" for k, v in data["delta"].items())
              + ("  REGRESSED" if data["regressed"] else ""), file=out)


async def run_eval_command(args: argparse.Namespace, settings: Settings, out: TextIO, err: TextIO) -> int:
    from commands.errors import CommandError
    from gateway.process.wiring import open_services

    async with open_services(settings, origin="cli") as services:
        try:
            return await _eval(args, services, out, err)
        except CommandError as exc:
            print(f"zhiyi eval {args.eval_command}: {exc.message}", file=err)
            return 2


async def _eval(args: argparse.Namespace, services: Services, out: TextIO, err: TextIO) -> int:
    from commands.evaluation import GenerateGoldenSet, RunEval
    from commands.access import scope_resolver
    from gateway.http.handlers.evaluation import report_json
    from projections.core.epoch import open_projections_epoch
    from projections.queries.evaluation.eval_log import history

    store = services.store
    await open_projections_epoch(store, services.settings.data_dir)  # a wiped log: refused (log_reset), not restarted
    if args.eval_command == "history":
        data = await history(store, args.limit)
        out.write(orjson.dumps(data).decode() + "\n") if args.json else _print_history(data, out)
        return 0
    await _caught_up(services, err)
    if args.eval_command == "generate":  # no recall, so no embedding model to load
        golden = await services.golden_sets.generate(
            GenerateGoldenSet(args.n, args.seed, args.namespace))
        if args.json:
            out.write(orjson.dumps(golden.to_json()).decode() + "\n")
        else:
            print(f"golden set {golden.golden_set_id} ({len(golden.queries)} queries, seed {golden.seed}) "
                  f"at position {golden.position}", file=out)
            for q in golden.queries:
                print(f"  {q.tag:<13} {q.difficulty:<6} {q.query[:70]}", file=out)
        return 0
    await services.recall.load(wait=True)
    scope_of = scope_resolver(services.commands, args.namespace, agent_key=None)
    done = await services.eval.run(RunEval(None, args.golden_set_id, args.top_k, args.namespace), scope_of)
    report = report_json(done)
    trend = await history(store, 2)
    out.write(orjson.dumps({**report, "delta": trend["delta"], "regressed": trend["regressed"]}).decode() + "\n") \
        if args.json else _print_report(report, out)
    if trend["regressed"]:
        print("zhiyi eval run: recall@5 regressed by more than 0.05 against the previous run", file=err)
        return 1
    return 0
