"""`zhiyi eval run|generate|history`: the evaluation framework (seed 6.1) from the command line.

Works in-process against the live data dir and the log, like `zhiyi digest`: it builds the same
`RecallService` the gateway serves recalls with (over `<data-dir>/projections/memories`) and the
same `EvalService`, acting with the admin's rights. `eval run` exits 1 when the run regressed
(recall@5 more than 0.05 below the previous run), so it can gate a deployment.
"""

from __future__ import annotations

import argparse
from typing import Any, TextIO

import orjson

from gateway.process.settings import Settings

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


def _embedder(settings: Settings) -> Any:
    from projections.models.embedding import make_embedder

    return make_embedder(bge_endpoint=settings.bge_endpoint, bge_api_key=settings.bge_api_key,
                         bge_model=settings.bge_model, cache_path=str(settings.embedding_cache_path),
                         threads=settings.embedding_threads)


async def _caught_up(store: Any, out: TextIO) -> None:
    from projections.core.waiter import CheckpointWaiter

    last = await store.last_position()
    if last and not await CheckpointWaiter(store).wait(["memories"], last, CATCH_UP_S):
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
    from commands.evaluation import EvalService, GenerateGoldenSet, RunEval
    from commands.handlers import CommandService
    from events.redis.client import connect
    from events.redis.store import EventStore
    from gateway.http.handlers.evaluation import report_json, scope_resolver
    from projections.queries.evaluation.eval_log import history
    from gateway.process.runtime import build_recall
    from projections.activity.reader import ActivityReader
    from projections.synonyms.reader import SynonymsReader
    from projections.memories.reader import MemoriesReader
    from projections.core.epoch import open_projections_epoch
    from projections.core.registry import projection_dir

    redis = connect(settings.redis_url)
    store = EventStore(redis, origin="cli")
    embedder = None
    reader = None
    reranker = None
    recaller = None
    synonyms = SynonymsReader(projection_dir(settings.data_dir, "synonyms"))
    activity = ActivityReader(projection_dir(settings.data_dir, "activity"))
    try:
        await open_projections_epoch(store, settings.data_dir)  # a wiped log: refused (log_reset), not restarted
        if args.eval_command == "history":
            data = await history(store, args.limit)
            out.write(orjson.dumps(data).decode() + "\n") if args.json else _print_history(data, out)
            return 0
        await _caught_up(store, err)
        reader = MemoriesReader(projection_dir(settings.data_dir, "memories"))
        embedder = _embedder(settings) if args.eval_command == "run" else None
        if embedder is not None:
            recaller, reranker = build_recall(settings, reader, embedder, synonyms, activity=activity)
            await recaller.index.wait_ready()
        else:
            recaller = None
        service = EvalService(store, recaller, reader)
        if args.eval_command == "generate":
            golden = await service.generate(GenerateGoldenSet(args.n, args.seed, args.namespace))
            if args.json:
                out.write(orjson.dumps(golden.to_json()).decode() + "\n")
            else:
                print(f"golden set {golden.golden_set_id} ({len(golden.queries)} queries, seed {golden.seed}) "
                      f"at position {golden.position}", file=out)
                for q in golden.queries:
                    print(f"  {q.tag:<13} {q.difficulty:<6} {q.query[:70]}", file=out)
            return 0
        scope_of = scope_resolver(CommandService(store, settings.limits), args.namespace, agent_key=None)
        done = await service.run(RunEval(None, args.golden_set_id, args.top_k, args.namespace), scope_of)
        report = report_json(done)
        trend = await history(store, 2)
        out.write(orjson.dumps({**report, "delta": trend["delta"], "regressed": trend["regressed"]}).decode() + "\n") \
            if args.json else _print_report(report, out)
        if trend["regressed"]:
            print("zhiyi eval run: recall@5 regressed by more than 0.05 against the previous run", file=err)
            return 1
        return 0
    except CommandError as exc:
        print(f"zhiyi eval {args.eval_command}: {exc.message}", file=err)
        return 2
    finally:
        synonyms.close()
        activity.close()
        if reader is not None:
            reader.close()
        if embedder is not None:
            embedder.close()
        if reranker is not None:
            await reranker.close()
        if recaller is not None:
            await recaller.index.close()
        await redis.aclose()
