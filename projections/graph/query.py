"""A small Cypher-like pattern language over the knowledge graph (seed 2.5), parsed safely.

Grammar (keywords case-insensitive; at most ``MAX_TEXT`` characters)::

    query   := MATCH pattern [WHERE cond (AND cond)*] RETURN ret (, ret)* [LIMIT n]
    pattern := node | node edge node | node edge node edge node          (one or two hops)
    node    := '(' var [':' NodeType] ['{' field ':' value (, field ':' value)* '}'] ')'
    edge    := '-[' [var] [':' RelType] ']->'        outgoing: left node is the source
             | '<-[' [var] [':' RelType] ']-'        incoming: left node is the target
             | '-[' [var] [':' RelType] ']-'         either direction
    cond    := var '.' field op value      op := = | != | < | <= | > | >= | CONTAINS | STARTS WITH
    ret     := var | var '.' field | count(*)
    value   := 'string' | "string" (escapes \\\\ \\' \\" \\n \\t \\r) | int | float | true | false

Node fields: id, type, label, namespace, pagerank, created_at, last_updated_at and
``properties.<key>`` (read with ``json_extract``). Edge fields: id, relation_type, weight,
evidence_count, namespace, created_at. NodeType is one of ``NODE_TYPES``, RelType one of
``RELATION_TYPES`` (either matched case-insensitively). LIMIT is 1..``MAX_LIMIT``, default 100.

Examples::

    MATCH (m:decision)-[:DEPENDS_ON]->(d) WHERE d.label CONTAINS 'redis' RETURN m.id, d.label LIMIT 10
    MATCH (m {properties.category: 'fact'})-[r]-(e:entity) RETURN e.label, count(*)
    MATCH (a)-[:REFERENCES]->(e:entity)<-[:REFERENCES]-(b) WHERE a.id = 'mem-1' RETURN b

Semantics: as in Cypher, the two edges of a two-hop pattern are distinct, and a node variable
used twice is the same node; an undirected edge matches in both orientations. A whole variable
returns a dict (node: id, type, label, namespace, properties (decoded), pagerank; edge: id,
source_id, target_id, relation_type, weight, evidence_count, namespace). With ``count(*)`` the
other returned items are the grouping keys (groups sorted by them); other rows come in SQLite's
scan order, so that LIMIT can stop early. A query is interrupted after ``DEFAULT_BUDGET_S``.

Safety: a real tokenizer and a recursive-descent parser build a ``Query``; ``run`` builds SQL
only from fixed table aliases and whitelisted column names, every value (and JSON path) is bound
as a ``?`` parameter, and every node and edge alias is restricted to the reader's namespaces.
"""
from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Sequence
from typing import Any

from projections.graph.query_parse import (
    DEFAULT_BUDGET_S, EDGE_FIELDS, EDGE_WHOLE, MAX_LIMIT, MAX_TEXT, NODE_FIELDS, NODE_WHOLE, OPS, _IDENT, Condition,
    EdgePattern, Field, GraphQueryError, NodePattern, Query, ReturnItem, parse,
)

__all__ = ["Condition", "EdgePattern", "Field", "GraphQueryError", "NodePattern", "Query", "ReturnItem",
           "MAX_LIMIT", "MAX_TEXT", "compile_sql", "parse", "run"]


def _column(alias: str, field: Field, params: list[Any]) -> str:
    """A whitelisted column of ``alias`` (checked again here: a ``Query`` can be built by hand)."""
    if alias[0] == "n" and field.name == "properties" and field.key and _IDENT.fullmatch(field.key):
        params.append(f'$."{field.key}"')
        return f"json_extract({alias}.properties, ?)"
    if field.key is None and field.name in (NODE_FIELDS if alias[0] == "n" else EDGE_FIELDS):
        return f"{alias}.{field.name}"
    raise GraphQueryError(f"invalid field {field!r}", 0)


def _alias(alias: dict[str, str], var: str | None) -> str:
    if var not in alias:
        raise GraphQueryError(f"unknown variable {var!r}", 0)
    return alias[str(var)]


def compile_sql(query: Query, namespaces: Sequence[str]) -> tuple[str, list[Any]]:
    """The SQL and its parameters for ``query``: aliases n0.. and e0.., whitelisted columns only,
    every value bound. Namespace filters are written ``+x.namespace IN (...)`` so that SQLite reaches
    rows through ids and the edge indexes rather than through the low-selectivity namespace indexes."""
    if not (len(query.nodes) == len(query.edges) + 1 <= 3 and 1 <= query.limit <= MAX_LIMIT):
        raise GraphQueryError("a query has one to three nodes and a LIMIT in 1..1000", 0)
    ns = list(dict.fromkeys(namespaces))
    nsm = ", ".join("?" * len(ns))
    alias: dict[str, str] = {}
    froms: list[str] = []
    where: list[str] = []
    params: list[Any] = []  # of the WHERE clause; the SELECT's come first
    at: list[str] = []      # the alias of each node occurrence
    for node in query.nodes:
        if node.var not in alias:
            alias[node.var] = a = f"n{len(froms)}"
            froms.append(f"graph_nodes {a}")
            where.append(f"+{a}.namespace IN ({nsm})")
            params += ns
        a = alias[node.var]
        at.append(a)
        if node.type is not None:
            where.append(f"{a}.type = ?")
            params.append(node.type)
        for field, value in node.props:
            where.append(f"{_column(a, field, params)} = ?")
            params.append(value)
    for i, edge in enumerate(query.edges):
        e, left, right = f"e{i}", at[i], at[i + 1]
        froms.append(f"graph_edges {e}")
        if edge.var is not None:
            alias[edge.var] = e
        where.append(f"+{e}.namespace IN ({nsm})")
        params += ns
        if edge.rel_type is not None:
            where.append(f"{e}.relation_type = ?")
            params.append(edge.rel_type)
        out = f"({e}.source_id = {left}.id AND {e}.target_id = {right}.id)"
        back = f"({e}.source_id = {right}.id AND {e}.target_id = {left}.id)"
        joins = {"out": out, "in": back, "both": f"({out} OR {back})"}
        if edge.direction not in joins:
            raise GraphQueryError(f"invalid edge direction {edge.direction!r}", 0)
        where.append(joins[edge.direction])
    if len(query.edges) == 2:
        where.append("e0.id != e1.id")
    for cond in query.where:
        col = _column(_alias(alias, cond.var), cond.field, params)
        if cond.op not in OPS:
            raise GraphQueryError(f"invalid operator {cond.op!r}", 0)
        where.append({"CONTAINS": f"instr({col}, ?) > 0", "STARTS WITH": f"instr({col}, ?) = 1"}.get(
            cond.op, f"{col} {cond.op} ?"))
        params.append(cond.value)

    select: list[str] = []
    sparams: list[Any] = []
    for item in query.returns:
        if item.kind == "count":
            select.append("count(*)")
        elif item.field is not None:
            select.append(_column(_alias(alias, item.var), item.field, sparams))
        else:
            a = _alias(alias, item.var)
            select += [f"{a}.{c}" for c in (NODE_WHOLE if a[0] == "n" else EDGE_WHOLE)]
    sql = f"SELECT {', '.join(select)} FROM {', '.join(froms)} WHERE {' AND '.join(where)}"
    keys = [str(k + 1) for k, col in enumerate(select) if col != "count(*)"]
    if keys and len(keys) < len(select):  # count(*) with grouping keys
        sql += f" GROUP BY {', '.join(keys)} ORDER BY {', '.join(keys)}"
    return sql + " LIMIT ?", [*sparams, *params, query.limit]


def run(conn: sqlite3.Connection, query: Query | str, namespaces: Sequence[str],
        budget_s: float = DEFAULT_BUDGET_S) -> dict[str, Any]:
    """Run a parsed (or textual) query over visible rows only: ``{"columns": [...], "rows": [...]}``.

    Rows come in SQLite's scan order (stable for a given graph) so that LIMIT stops early; grouped
    counts are sorted by their keys. A query still running after ``budget_s`` seconds is
    interrupted (through the connection's progress handler, which is cleared afterwards) and
    raises ``GraphQueryError``.
    """
    if isinstance(query, str):
        query = parse(query)
    sql, params = compile_sql(query, namespaces)
    deadline = time.monotonic() + budget_s
    conn.set_progress_handler(lambda: time.monotonic() > deadline, 10_000)
    try:
        rows = [tuple(r) for r in conn.execute(sql, params)]
    except sqlite3.OperationalError as exc:
        if "interrupt" not in str(exc):
            raise
        raise GraphQueryError(f"query ran past its {budget_s:g} s budget: anchor a node (e.g. {{id: ...}})"
                              " or narrow it", 0) from None
    finally:
        conn.set_progress_handler(None, 0)
    kinds = {n.var: "node" for n in query.nodes} | {e.var: "edge" for e in query.edges if e.var}
    return {"columns": [r.column for r in query.returns], "rows": [_shape(query, kinds, row) for row in rows]}


def _shape(query: Query, kinds: dict[str, str], row: Sequence[Any]) -> list[Any]:
    out: list[Any] = []
    i = 0
    for item in query.returns:
        if item.kind != "var":
            out.append(row[i])
            i += 1
            continue
        names = NODE_WHOLE if kinds[str(item.var)] == "node" else EDGE_WHOLE
        record = dict(zip(names, row[i:i + len(names)]))
        if "properties" in record:
            record["properties"] = _decode(record["properties"])
        out.append(record)
        i += len(names)
    return out


def _decode(text: str | None) -> Any:
    if text is None:
        return {}
    try:
        return json.loads(text)
    except ValueError:
        return None
