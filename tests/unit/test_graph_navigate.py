"""Multi-hop navigation (seed 2.5.4) over small SQLite graphs built with the projector's DDL."""

from __future__ import annotations

import random
import sqlite3

import pytest

from projections.core.errors import InvalidQuery
from projections.graph.navigate import GraphNotFound, Path, navigate
from projections.graph.schema import GRAPH_SCHEMA

NS = ["a-main", "shared"]


def _db(tmp_path, nodes, edges, name="graph.db") -> sqlite3.Connection:
    conn = sqlite3.connect(tmp_path / name)
    conn.executescript(GRAPH_SCHEMA)
    conn.executemany("INSERT INTO graph_nodes (id, type, label, namespace) VALUES (?, ?, ?, ?)",
                     [(n, "fact", f"label {n}", ns) for n, ns in nodes])
    conn.executemany("INSERT INTO graph_links (id, source_id, target_id, relation_type, weight, namespace)"
                     " VALUES (?, ?, ?, ?, ?, ?)",
                     [(f"{s}>{t}:{w}", s, t, "REFERENCES", w, ns) for s, t, w, ns in edges])
    conn.commit()
    return conn


def _ids(path: Path) -> list[str]:
    return [n["id"] for n in path.nodes]


@pytest.fixture
def diamond(tmp_path):
    # s -0.8- a -0.5- t ; s -0.9- b -0.6- t ; s -0.3- t ; s -1.0- c -1.0- d -0.9- t
    nodes = [(n, "a-main") for n in ("s", "a", "b", "c", "d", "t")]
    edges = [("s", "a", 0.8, "a-main"), ("a", "t", 0.5, "a-main"), ("s", "b", 0.9, "a-main"),
             ("b", "t", 0.6, "a-main"), ("s", "t", 0.3, "a-main"), ("s", "c", 1.0, "a-main"),
             ("c", "d", 1.0, "a-main"), ("d", "t", 0.9, "a-main")]
    return _db(tmp_path, nodes, edges)


def test_two_hop_path_scores_the_product_of_weights(tmp_path):
    conn = _db(tmp_path, [("s", "a-main"), ("m", "a-main"), ("t", "a-main")],
               [("s", "m", 0.8, "a-main"), ("m", "t", 0.5, "a-main")])
    [path] = navigate(conn, "s", "t", NS)
    assert _ids(path) == ["s", "m", "t"]
    assert path.score == pytest.approx(0.4)
    assert [e["id"] for e in path.edges] == ["s>m:0.8", "m>t:0.5"]
    assert path.nodes[0] == {"id": "s", "type": "fact", "label": "label s", "namespace": "a-main"}
    assert set(path.edges[0]) == {"id", "source_id", "target_id", "relation_type", "weight"}


def test_best_paths_first_and_at_most_three(diamond):
    paths = navigate(diamond, "s", "t", NS)
    assert [_ids(p) for p in paths] == [["s", "c", "d", "t"], ["s", "b", "t"], ["s", "a", "t"]]
    assert [p.score for p in paths] == pytest.approx([0.9, 0.54, 0.4])
    assert len(navigate(diamond, "s", "t", NS, max_paths=10)) == 4  # plus the direct edge (0.3)
    assert [_ids(p) for p in navigate(diamond, "s", "t", NS, max_paths=1)] == [["s", "c", "d", "t"]]


def test_max_hops_is_respected(diamond):
    assert [_ids(p) for p in navigate(diamond, "s", "t", NS, max_hops=1)] == [["s", "t"]]
    two = navigate(diamond, "s", "t", NS, max_hops=2)
    assert [_ids(p) for p in two] == [["s", "b", "t"], ["s", "a", "t"], ["s", "t"]]
    for bad in (0, 4, -1, True, "3"):
        with pytest.raises(InvalidQuery):
            navigate(diamond, "s", "t", NS, max_hops=bad)
    with pytest.raises(InvalidQuery):
        navigate(diamond, "s", "t", NS, max_paths=0)


def test_no_path_beyond_three_hops(tmp_path):
    chain = [("n0", "n1"), ("n1", "n2"), ("n2", "n3"), ("n3", "n4")]
    conn = _db(tmp_path, [(f"n{i}", "a-main") for i in range(5)], [(s, t, 1.0, "a-main") for s, t in chain])
    assert [_ids(p) for p in navigate(conn, "n0", "n3", NS)] == [["n0", "n1", "n2", "n3"]]
    assert navigate(conn, "n0", "n4", NS) == []


def test_edges_are_traversed_in_both_directions_and_keep_their_direction(tmp_path):
    conn = _db(tmp_path, [("s", "a-main"), ("a", "a-main"), ("b", "a-main"), ("t", "a-main")],
               [("a", "s", 0.5, "a-main"), ("a", "b", 0.5, "a-main"), ("t", "b", 0.5, "a-main")])
    [path] = navigate(conn, "s", "t", NS)
    assert _ids(path) == ["s", "a", "b", "t"]
    assert [(e["source_id"], e["target_id"]) for e in path.edges] == [("a", "s"), ("a", "b"), ("t", "b")]
    [back] = navigate(conn, "t", "s", NS)
    assert _ids(back) == ["t", "b", "a", "s"] and back.score == pytest.approx(path.score)


def test_heaviest_parallel_edge_counts_and_ties_are_deterministic(tmp_path):
    conn = _db(tmp_path, [(n, "a-main") for n in ("s", "x", "y", "t")],
               [("s", "x", 0.5, "a-main"), ("x", "t", 0.5, "a-main"), ("t", "x", 0.9, "a-main"),
                ("s", "y", 0.9, "a-main"), ("y", "t", 0.5, "a-main")])
    paths = navigate(conn, "s", "t", NS)
    assert [_ids(p) for p in paths] == [["s", "x", "t"], ["s", "y", "t"]]
    assert paths[0].edges[1]["id"] == "t>x:0.9"
    assert paths[0].score == paths[1].score == pytest.approx(0.45)


def test_no_repeated_nodes(tmp_path):
    conn = _db(tmp_path, [(n, "a-main") for n in ("s", "a", "t")],
               [("s", "a", 1.0, "a-main"), ("a", "s", 1.0, "a-main"), ("a", "a", 1.0, "a-main"),
                ("a", "t", 0.5, "a-main")])
    for path in navigate(conn, "s", "t", NS):
        assert len(set(_ids(path))) == len(path.nodes)
    assert [_ids(p) for p in navigate(conn, "s", "t", NS)] == [["s", "a", "t"]]


def test_namespace_isolation(tmp_path):
    nodes = [("s", "a-main"), ("t", "a-main"), ("hidden", "b-main"), ("m", "shared"), ("z", "a-main")]
    edges = [("s", "hidden", 1.0, "a-main"), ("hidden", "t", 1.0, "a-main"),  # through an invisible node
             ("s", "z", 1.0, "b-main"), ("z", "t", 1.0, "a-main"),            # through an invisible edge
             ("s", "m", 0.2, "shared"), ("m", "t", 0.2, "a-main")]
    conn = _db(tmp_path, nodes, edges)
    paths = navigate(conn, "s", "t", NS)
    assert [_ids(p) for p in paths] == [["s", "m", "t"]]
    assert navigate(conn, "s", "t", ["a-main"]) == []
    with pytest.raises(GraphNotFound):
        navigate(conn, "s", "hidden", NS)
    with pytest.raises(GraphNotFound):
        navigate(conn, "s", "t", [])


def test_unknown_nodes_and_same_node(diamond):
    with pytest.raises(GraphNotFound) as caught:
        navigate(diamond, "s", "nope", NS)
    assert caught.value.node_id == "nope" and isinstance(caught.value, LookupError)
    with pytest.raises(GraphNotFound):
        navigate(diamond, "nope", "t", NS)
    assert navigate(diamond, "s", "s", NS) == []


def test_a_hub_is_bounded(tmp_path):
    spokes = [f"h{i:04d}" for i in range(600)]
    nodes = [("s", "a-main"), ("hub", "a-main"), ("t", "a-main"), *[(x, "a-main") for x in spokes]]
    edges = [("s", "hub", 1.0, "a-main"), ("hub", "t", 1.0, "a-main"),
             *[("hub", x, 0.1, "a-main") for x in spokes], *[(x, "t", 0.1, "a-main") for x in spokes]]
    conn = _db(tmp_path, nodes, edges)
    paths = navigate(conn, "s", "t", NS)
    assert _ids(paths[0]) == ["s", "hub", "t"] and paths[0].score == pytest.approx(1.0)
    assert len(paths) == 3


def test_ten_thousand_nodes_fifty_thousand_edges_navigate(tmp_path):
    """Correctness at the seed's size; its speed (p50/p99) is measured by tests/bench/graph.py."""
    rng = random.Random(7)
    n_nodes, n_edges = 10_000, 50_000
    nodes = [(f"node-{i}", "a-main") for i in range(n_nodes)]
    edges, seen = [], set()
    while len(edges) < n_edges:
        s, t = rng.randrange(n_nodes), rng.randrange(n_nodes)
        if s != t and (s, t) not in seen:
            seen.add((s, t))
            edges.append((f"node-{s}", f"node-{t}", round(rng.uniform(0.05, 1.0), 3), "a-main"))
    conn = _db(tmp_path, nodes, edges, name="big.db")
    found = 0
    for _ in range(50):
        s, t = rng.sample(range(n_nodes), 2)
        paths = navigate(conn, f"node-{s}", f"node-{t}", NS)
        found += bool(paths)
        assert all(len(p.edges) <= 3 for p in paths)
        assert [p.score for p in paths] == sorted((p.score for p in paths), reverse=True)
    assert found > 0  # average degree 10: ~10% of random pairs are within 3 hops


def _brute_force(edges, source, target, max_hops):
    best: dict[frozenset, float] = {}
    for s, t, w, _ in edges:
        if s != t:
            key = frozenset((s, t))
            best[key] = max(best.get(key, 0.0), w)
    adjacent: dict[str, set[str]] = {}
    for pair in best:
        a, b = tuple(pair)
        adjacent.setdefault(a, set()).add(b)
        adjacent.setdefault(b, set()).add(a)
    found = []

    def walk(path, score):
        if path[-1] == target:
            found.append((-round(score, 12), len(path), tuple(path)))
            return
        if len(path) > max_hops:
            return
        for nxt in sorted(adjacent.get(path[-1], ())):
            if nxt not in path:
                walk([*path, nxt], score * best[frozenset((path[-1], nxt))])

    walk([source], 1.0)
    return [list(p) for _, _, p in sorted(found)]


@pytest.mark.parametrize("seed", range(5))
def test_matches_an_exhaustive_search_on_small_random_graphs(tmp_path, seed):
    rng = random.Random(seed)
    names = [f"v{i}" for i in range(25)]
    edges = [(rng.choice(names), rng.choice(names), rng.choice((0.2, 0.4, 0.5, 0.7, 0.9)), "a-main")
             for _ in range(60)]
    edges = list({(s, t, w, ns): None for s, t, w, ns in edges})
    conn = _db(tmp_path, [(n, "a-main") for n in names], edges)
    for _ in range(30):
        s, t = rng.sample(names, 2)
        for hops in (1, 2, 3):
            got = [_ids(p) for p in navigate(conn, s, t, NS, max_hops=hops, max_paths=50)]
            assert got == _brute_force(edges, s, t, hops)[:50], (s, t, hops)
