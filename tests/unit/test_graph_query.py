"""The Cypher-like graph query language: parser, safety, and namespace-isolated execution."""

from __future__ import annotations

import json
import sqlite3

import pytest

from projections.core.errors import InvalidQuery
from projections.graph.query import (
    MAX_LIMIT, Condition, EdgePattern, Field, GraphQueryError, NodePattern, Query, ReturnItem, compile_sql, parse, run,
)
from projections.graph.schema import GRAPH_SCHEMA
from tests.graph_tables import insert_edges

NS = ["a-main", "shared"]


@pytest.fixture
def conn(tmp_path) -> sqlite3.Connection:
    db = sqlite3.connect(tmp_path / "graph.db")
    db.executescript(GRAPH_SCHEMA)
    nodes = [
        ("m1", "decision", "use redis streams", "a-main", {"memory_id": "m1", "category": "decision"}, 2.0),
        ("m2", "fact", "redis runs on port 6379", "a-main", {"memory_id": "m2", "category": "fact"}, 1.5),
        ("m3", "fact", "lancedb stores vectors", "shared", {"memory_id": "m3", "category": "fact"}, 1.0),
        ("e-redis", "entity", "redis", "a-main", {"kind": "tech"}, 3.0),
        ("x1", "fact", "secret of agent b", "b-main", {"memory_id": "x1", "category": "fact"}, 9.0),
        ("x2", "fact", "x' OR 1=1 --", "b-main", {}, 1.0),
    ]
    db.executemany("INSERT INTO graph_nodes (id, type, label, namespace, properties, pagerank) VALUES (?,?,?,?,?,?)",
                   [(i, t, label, ns, json.dumps(p), pr) for i, t, label, ns, p, pr in nodes])
    edges = [
        ("r1", "m1", "e-redis", "REFERENCES", 0.5, "a-main", 1),
        ("r2", "m2", "e-redis", "REFERENCES", 0.5, "a-main", 1),
        ("d1", "m1", "m2", "DEPENDS_ON", 1.0, "a-main", 2),
        ("c1", "m2", "m3", "CO_OCCURS", 0.8, "shared", 4),
        ("rx", "x1", "e-redis", "REFERENCES", 0.5, "b-main", 1),    # invisible edge and node
        ("hx", "m3", "m1", "CONFLICTS_WITH", 0.9, "b-main", 1),     # invisible edge between visible nodes
    ]
    insert_edges(db, ("id", "source_id", "target_id", "relation_type", "weight", "namespace", "evidence_count"),
                 edges)
    db.commit()
    return db


def q(conn, text, namespaces=NS):
    return run(conn, parse(text), namespaces)


def rows(conn, text, namespaces=NS):
    """Rows sorted (ungrouped rows come in scan order)."""
    return sorted(q(conn, text, namespaces)["rows"], key=repr)


# ---------------------------------------------------------------- parser


def test_parses_each_construct():
    query = parse("match (m:Decision {label: 'x', properties.category: \"decision\"})-[r:depends_on]->(d) "
                  "where d.pagerank >= 1.5 and r.weight < 2 and m.label contains 'redis' "
                  "and d.id starts with 'm' return m, d.label, r.weight, m.properties.category limit 7")
    assert query.nodes == (
        NodePattern("m", "decision", ((Field("label"), "x"), (Field("properties", "category"), "decision"))),
        NodePattern("d"),
    )
    assert query.edges == (EdgePattern("r", "DEPENDS_ON", "out"),)
    assert query.where == (Condition("d", Field("pagerank"), ">=", 1.5), Condition("r", Field("weight"), "<", 2),
                           Condition("m", Field("label"), "CONTAINS", "redis"),
                           Condition("d", Field("id"), "STARTS WITH", "m"))
    assert query.returns == (ReturnItem("var", "m"), ReturnItem("field", "d", Field("label")),
                             ReturnItem("field", "r", Field("weight")),
                             ReturnItem("field", "m", Field("properties", "category")))
    assert [r.column for r in query.returns] == ["m", "d.label", "r.weight", "m.properties.category"]
    assert query.limit == 7


def test_edge_directions_and_two_hops():
    assert parse("MATCH (a)-[]->(b) RETURN a").edges == (EdgePattern(None, None, "out"),)
    assert parse("MATCH (a)<-[:REFERENCES]-(b) RETURN a").edges == (EdgePattern(None, "REFERENCES", "in"),)
    assert parse("MATCH (a)-[e]-(b) RETURN e").edges == (EdgePattern("e", None, "both"),)
    two = parse("MATCH (a)-[:REFERENCES]->(e:entity)<-[:REFERENCES]-(b) RETURN b")
    assert [n.var for n in two.nodes] == ["a", "e", "b"] and [e.direction for e in two.edges] == ["out", "in"]


def test_values_operators_count_and_limit_defaults():
    query = parse("MATCH (n) WHERE n.label = 'it\\'s \\\\ \"q\"' AND n.pagerank != -2 AND n.pagerank > 1e2 "
                  "AND n.properties.flag = TRUE AND n.properties.other <= false RETURN count(*)")
    assert [c.value for c in query.where] == ["it's \\ \"q\"", -2, 100.0, True, False]
    assert [c.op for c in query.where] == ["=", "!=", ">", "=", "<="]
    assert query.returns == (ReturnItem("count"),) and query.limit == 100
    assert parse("MATCH (n) RETURN n LIMIT 1").limit == 1
    assert parse(f"MATCH (n) RETURN n LIMIT {MAX_LIMIT}").limit == MAX_LIMIT


@pytest.mark.parametrize("text, position", [
    ("", 0),
    ("RETURN n", 0),
    ("MATCH n RETURN n", 6),
    ("MATCH () RETURN 1", 7),
    ("MATCH (n RETURN n", 9),
    ("MATCH (n:person) RETURN n", 9),
    ("MATCH (n)-[:LIKES]->(m) RETURN n", 12),
    ("MATCH (n)<-[r]->(m) RETURN n", 13),
    ("MATCH (n)-[r]>(m) RETURN n", 12),
    ("MATCH (n)-->(m) RETURN n", 9),
    ("MATCH (a)-[]->(b)-[]->(c)-[]->(d) RETURN a", 25),
    ("MATCH (n) RETURN", 16),
    ("MATCH (n) RETURN m", 17),
    ("MATCH (n) RETURN n.colour", 19),
    ("MATCH (n) RETURN n.properties", 29),
    ("MATCH (n)-[r]->(m) RETURN r.label", 28),
    ("MATCH (n) WHERE n.label RETURN n", 24),
    ("MATCH (n) WHERE n.label == 'x' RETURN n", 25),
    ("MATCH (n) WHERE n.label = RETURN n", 26),
    ("MATCH (n) WHERE n.label = 'x' OR n.id = 'y' RETURN n", 30),
    ("MATCH (n) WHERE n.pagerank CONTAINS 1 RETURN n", 36),
    ("MATCH (n) WHERE n.label STARTS 'x' RETURN n", 31),
    ("MATCH (n) WHERE x.label = 'x' RETURN n", 16),
    ("MATCH (n) RETURN n LIMIT 0", 25),
    ("MATCH (n) RETURN n LIMIT 1001", 25),
    ("MATCH (n) RETURN n LIMIT 2.5", 25),
    ("MATCH (n) RETURN n LIMIT", 24),
    ("MATCH (n) RETURN n; DROP TABLE graph_nodes", 18),
    ("MATCH (n {label: 'x}) RETURN n", 17),
    ("MATCH (n {label: 'a\\q'}) RETURN n", 19),
    ("MATCH (n {}) RETURN n", 10),
    ("MATCH (n {label 'x'}) RETURN n", 16),
    ("MATCH (n {label: x}) RETURN n", 17),
    ("MATCH (n) RETURN count(n)", 23),
    ("MATCH (match) RETURN match", 7),
    ("MATCH (n)-[n]->(m) RETURN n", 11),
    ("MATCH (n)-[r]->(r) RETURN n", 16),
    ("MATCH (n) WHERE n.pagerank > 1e999 RETURN n", 29),
    ("MATCH (n) WHERE n.pagerank > 99999999999999999999 RETURN n", 29),
    ("MATCH (n) RETURN n LIMIT 5 extra", 27),
    ("MATCH (n) RETURN n $", 19),
])
def test_malformed_queries_raise_with_a_position(text, position):
    with pytest.raises(GraphQueryError) as caught:
        parse(text)
    assert caught.value.position == position, caught.value.message
    assert isinstance(caught.value, (ValueError, InvalidQuery)) and caught.value.message
    assert f"position {position}" in str(caught.value)


def test_too_long_and_non_string_queries():
    with pytest.raises(GraphQueryError) as caught:
        parse("MATCH (n) RETURN n " + " " * 2000)
    assert caught.value.position == 2000
    with pytest.raises(GraphQueryError):
        parse(None)  # type: ignore[arg-type]


# ---------------------------------------------------------------- execution


def test_returns_whole_nodes_edges_and_fields(conn):
    out = q(conn, "MATCH (m:decision)-[r:DEPENDS_ON]->(d) RETURN m, r, d.label, d.properties.category")
    assert out["columns"] == ["m", "r", "d.label", "d.properties.category"]
    [[m, r, label, category]] = out["rows"]
    assert m == {"id": "m1", "type": "decision", "label": "use redis streams", "namespace": "a-main",
                 "properties": {"memory_id": "m1", "category": "decision"}, "pagerank": 2.0}
    assert r == {"id": "d1", "source_id": "m1", "target_id": "m2", "relation_type": "DEPENDS_ON", "weight": 1.0,
                 "evidence_count": 2, "namespace": "a-main"}
    assert (label, category) == ("redis runs on port 6379", "fact")


def test_directions(conn):
    assert rows(conn, "MATCH (a {id: 'm2'})-[]->(b) RETURN b.id") == [["e-redis"], ["m3"]]
    assert rows(conn, "MATCH (a {id: 'm2'})<-[]-(b) RETURN b.id") == [["m1"]]
    assert rows(conn, "MATCH (a {id: 'm2'})-[]-(b) RETURN b.id") == [["e-redis"], ["m1"], ["m3"]]


def test_two_hops_through_a_shared_entity(conn):
    out = rows(conn, "MATCH (a)-[:REFERENCES]->(e:entity)<-[:REFERENCES]-(b) RETURN a.id, b.id")
    assert out == [["m1", "m2"], ["m2", "m1"]]  # never the same edge twice, so never a == b here
    loop = q(conn, "MATCH (a)-[]-(b)-[]-(a) WHERE a.id = 'm1' RETURN b.id")
    assert loop["rows"] == []  # a node variable used twice is one node: needs two distinct m1-b edges


def test_where_operators(conn):
    def ids(where):
        return [r[0] for r in rows(conn, f"MATCH (n) WHERE {where} RETURN n.id")]

    assert ids("n.label CONTAINS 'redis'") == ["e-redis", "m1", "m2"]
    assert ids("n.label STARTS WITH 'redis'") == ["e-redis", "m2"]
    assert ids("n.label CONTAINS '%'") == []  # no LIKE wildcards
    assert ids("n.pagerank > 1.5") == ["e-redis", "m1"]
    assert ids("n.pagerank >= 1.5 AND n.type != 'entity'") == ["m1", "m2"]
    assert ids("n.pagerank <= 1") == ["m3"]
    assert ids("n.properties.category = 'fact'") == ["m2", "m3"]
    assert ids("n.namespace = 'b-main'") == []


def test_count_and_grouping(conn):
    assert q(conn, "MATCH (n) RETURN count(*)") == {"columns": ["count(*)"], "rows": [[4]]}
    grouped = q(conn, "MATCH (n) RETURN n.type, count(*)")
    assert grouped["rows"] == [["decision", 1], ["entity", 1], ["fact", 2]]
    per_node = q(conn, "MATCH (m)-[:REFERENCES]->(e) RETURN e, count(*)")["rows"]
    assert [(row[0]["id"], row[1]) for row in per_node] == [("e-redis", 2)]


def test_limit_applies(conn):
    assert len(q(conn, "MATCH (n) RETURN n.id LIMIT 2")["rows"]) == 2


def test_run_accepts_text(conn):
    assert run(conn, "MATCH (n {id: 'm1'}) RETURN n.label", NS)["rows"] == [["use redis streams"]]


@pytest.mark.parametrize("text", [
    "MATCH (n {label: \"x' OR 1=1 --\"}) RETURN n",
    "MATCH (n) WHERE n.label = '\\' OR 1=1 --' RETURN n",
    "MATCH (n) WHERE n.id = \"m1\\\" OR \\\"1\\\"=\\\"1\" RETURN n",
    "MATCH (n) WHERE n.properties.category = \"') OR 1=1; DROP TABLE graph_nodes; --\" RETURN n",
    "MATCH (n) WHERE n.label CONTAINS \"x' UNION SELECT id, type, label, namespace, properties, 1 FROM graph_nodes --\""
    " RETURN n",
])
def test_injection_attempts_are_plain_values(conn, text):
    assert q(conn, text)["rows"] == []
    assert conn.execute("SELECT count(*) FROM graph_nodes").fetchone()[0] == 6


def test_compiled_sql_holds_no_value_and_filters_every_alias():
    query = parse("MATCH (a:fact {label: 'evil'})-[r:REFERENCES]->(e)<-[]-(b) WHERE b.properties.k CONTAINS 'x--'"
                  " RETURN a.properties.category, count(*) LIMIT 3")
    sql, params = compile_sql(query, ["ns1", "ns2"])
    for text in ("evil", "x--", "fact", "REFERENCES", "ns1", "category", "'"):
        assert text not in sql
    for alias in ("n0", "n1", "n2", "e0", "e1"):
        assert f"+{alias}.namespace IN (?, ?)" in sql
    assert sql.count("?") == len(params) and params[0] == '$."category"' and params[-1] == 3


@pytest.mark.parametrize("query", [
    Query((NodePattern("n"),), (), (), (ReturnItem("field", "n", Field("id FROM graph_nodes --")),)),
    Query((NodePattern("n"),), (), (), (ReturnItem("field", "n", Field("properties", "k') --")),)),
    Query((NodePattern("n"),), (), (Condition("n", Field("id"), "= 1 OR 1 =", "x"),), (ReturnItem("var", "n"),)),
    Query((NodePattern("n"),), (), (Condition("n", Field("weight"), "=", 1),), (ReturnItem("var", "n"),)),
    Query((NodePattern("n"), NodePattern("m")), (EdgePattern(direction="sideways"),), (), (ReturnItem("var", "n"),)),
    Query((NodePattern("n"),), (), (), (ReturnItem("var", "ghost"),)),
    Query((NodePattern("n"),), (), (), (ReturnItem("var", "n"),), limit=10**6),
])
def test_hand_built_queries_are_checked_too(conn, query):
    with pytest.raises(GraphQueryError):
        run(conn, query, NS)


def test_a_query_past_its_budget_is_interrupted(tmp_path):
    db = sqlite3.connect(tmp_path / "big.db")
    db.executescript(GRAPH_SCHEMA)
    db.executemany("INSERT INTO graph_nodes (id, type, label, namespace) VALUES (?, 'fact', 'x', 'a-main')",
                   [(f"n{i}",) for i in range(100)])
    insert_edges(db, ("source_id", "target_id", "namespace"),
                 [(f"n{i}", f"n{j}", "a-main") for i in range(100) for j in range(i + 1, 100, 7)])
    text = "MATCH (a)-[]-(b)-[]-(c) RETURN count(*)"
    assert run(db, text, NS)["rows"][0][0] > 10_000
    with pytest.raises(GraphQueryError, match="budget"):
        run(db, text, NS, budget_s=-1.0)
    assert run(db, "MATCH (n) RETURN count(*)", NS)["rows"] == [[100]]  # the handler was cleared


def test_injection_attempts_in_identifiers_fail_to_parse():
    for text in ("MATCH (n) RETURN n.properties.x') FROM graph_nodes --",
                 "MATCH (n:fact OR 1=1) RETURN n",
                 "MATCH (n) WHERE n.label = 'x' RETURN n UNION SELECT * FROM graph_edges"):
        with pytest.raises(GraphQueryError):
            parse(text)


def test_namespace_isolation(conn):
    everything = q(conn, "MATCH (n) RETURN n.namespace")["rows"]
    assert {r[0] for r in everything} == {"a-main", "shared"}
    # an invisible label matches nothing, even when asked for directly
    assert q(conn, "MATCH (n) WHERE n.label = \"x' OR 1=1 --\" RETURN n")["rows"] == []
    assert q(conn, "MATCH (n {id: 'x1'}) RETURN n")["rows"] == []
    # visible nodes joined by an invisible edge (hx, b-main) never match
    assert q(conn, "MATCH (a)-[:CONFLICTS_WITH]-(b) RETURN a, b")["rows"] == []
    # an invisible node behind a visible one is never reached
    assert rows(conn, "MATCH (e {id: 'e-redis'})-[r]-(m) RETURN m.id, r.id") == [["m1", "r1"], ["m2", "r2"]]
    # narrowing the namespaces narrows every alias: m3 and c1 live in shared
    assert rows(conn, "MATCH (a)-[r]->(b) RETURN r.id", ["a-main"]) == [["d1"], ["r1"], ["r2"]]
    assert q(conn, "MATCH (a)-[r]->(b) RETURN count(*)", ["shared"])["rows"] == [[0]]
    assert q(conn, "MATCH (n) RETURN count(*)", [])["rows"] == [[0]]
    # and the other agent sees only its own
    assert rows(conn, "MATCH (n) RETURN n.id", ["b-main"]) == [["x1"], ["x2"]]
