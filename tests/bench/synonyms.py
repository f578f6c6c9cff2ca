"""Query expansion cost with a large synonyms table (projections.synonyms.reader): the time per
`SynonymTable.expansions` call for N symmetric groups of three terms, on an ordinary query. Every
recall expands its query, so this should stay well under a millisecond at a thousand groups.
(Moved out of the unit tests, where a time limit was flaky on a loaded machine.)

    OPENBLAS_NUM_THREADS=1 .venv/bin/python tests/bench/synonyms.py [--groups 1000] [--calls 2000]
"""

from __future__ import annotations

import argparse
import time

from _harness import percentile  # noqa: E402  (puts the repository on sys.path)

from projections.synonyms.reader import SynonymTable, normalize_term

QUERY = "a fairly ordinary recall query about term17 and 同义42 with some more words " * 3


def table(groups: int) -> SynonymTable:
    rows = []
    for i in range(groups):
        group = (f"term{i}", f"syn{i}", f"同义{i}")
        rows += [("shared", normalize_term(a), normalize_term(b), b) for a in group for b in group if a != b]
    return SynonymTable.from_rows(rows)


def main(args: argparse.Namespace) -> None:
    t = table(args.groups)
    out = t.expansions(QUERY)
    assert "syn17" in out and "term42" in out, out
    times = []
    for _ in range(args.calls):
        started = time.perf_counter()
        t.expansions(QUERY)
        times.append((time.perf_counter() - started) * 1000)
    print(f"synonym expansion, {args.groups} groups, {args.calls} calls: p50 {percentile(times, 50):.3f} ms, "
          f"p99 {percentile(times, 99):.3f} ms, mean {sum(times) / len(times):.3f} ms")


if __name__ == "__main__":
    p = argparse.ArgumentParser()
    p.add_argument("--groups", type=int, default=1000)
    p.add_argument("--calls", type=int, default=2000)
    main(p.parse_args())
