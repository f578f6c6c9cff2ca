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
import math
import re
import sqlite3
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Union

from projections.errors import InvalidQuery
from projections.queries.graph_schema import NODE_TYPES, RELATION_TYPES

__all__ = ["Condition", "EdgePattern", "Field", "GraphQueryError", "NodePattern", "Query", "ReturnItem",
           "MAX_LIMIT", "MAX_TEXT", "compile_sql", "parse", "run"]

MAX_TEXT = 2000
DEFAULT_LIMIT = 100
MAX_LIMIT = 1000
DEFAULT_BUDGET_S = 2.0
NODE_FIELDS = ("id", "type", "label", "namespace", "pagerank", "created_at", "last_updated_at")
EDGE_FIELDS = ("id", "relation_type", "weight", "evidence_count", "namespace", "created_at")
NODE_WHOLE = ("id", "type", "label", "namespace", "properties", "pagerank")
EDGE_WHOLE = ("id", "source_id", "target_id", "relation_type", "weight", "evidence_count", "namespace")
OPS = ("=", "!=", "<", "<=", ">", ">=", "CONTAINS", "STARTS WITH")
RESERVED = {"match", "where", "and", "return", "limit", "contains", "starts", "with", "true", "false", "count"}
_PUNCT = ("<-[", "]->", "]-", "-[", "<=", ">=", "!=", "(", ")", "{", "}", ":", ",", ".", "*", "=", "<", ">")
_NUMBER = re.compile(r"-?[0-9]+(\.[0-9]+)?([eE][+-]?[0-9]+)?")
_IDENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_ESCAPES = {"\\": "\\", "'": "'", '"': '"', "n": "\n", "t": "\t", "r": "\r"}
Value = Union[str, int, float, bool]


class GraphQueryError(InvalidQuery):
    """A malformed or invalid graph query; ``position`` is the 0-based offset in the text."""

    def __init__(self, message: str, position: int) -> None:
        super().__init__(f"{message} (at position {position})")
        self.message = message
        self.position = position


@dataclass(frozen=True)
class Field:
    name: str               # a column, or "properties" with ``key``
    key: str | None = None


@dataclass(frozen=True)
class NodePattern:
    var: str
    type: str | None = None
    props: tuple[tuple[Field, Value], ...] = ()


@dataclass(frozen=True)
class EdgePattern:
    var: str | None = None
    rel_type: str | None = None
    direction: str = "out"  # out (left -> right) | in (left <- right) | both


@dataclass(frozen=True)
class Condition:
    var: str
    field: Field
    op: str                 # one of OPS
    value: Value


@dataclass(frozen=True)
class ReturnItem:
    kind: str               # var | field | count
    var: str | None = None
    field: Field | None = None

    @property
    def column(self) -> str:
        if self.kind == "count":
            return "count(*)"
        if self.field is None:
            return str(self.var)
        return f"{self.var}.{self.field.name}" + (f".{self.field.key}" if self.field.key else "")


@dataclass(frozen=True)
class Query:
    nodes: tuple[NodePattern, ...]
    edges: tuple[EdgePattern, ...]
    where: tuple[Condition, ...]
    returns: tuple[ReturnItem, ...]
    limit: int = DEFAULT_LIMIT


@dataclass(frozen=True)
class _Tok:
    kind: str               # ident | string | number | punct | end
    value: Any
    pos: int


def _tokenize(text: str) -> list[_Tok]:
    toks: list[_Tok] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c.isspace():
            i += 1
        elif c in "'\"":
            out, j = [], i + 1
            while j < n and text[j] != c:
                if text[j] == "\\":
                    if j + 1 >= n or text[j + 1] not in _ESCAPES:
                        raise GraphQueryError("invalid escape in string", j)
                    out.append(_ESCAPES[text[j + 1]])
                    j += 2
                else:
                    out.append(text[j])
                    j += 1
            if j >= n:
                raise GraphQueryError("unterminated string", i)
            toks.append(_Tok("string", "".join(out), i))
            i = j + 1
        elif m := _NUMBER.match(text, i):
            value: int | float = float(m.group()) if m.group(1) or m.group(2) else int(m.group())
            if isinstance(value, float) and not math.isfinite(value) or isinstance(value, int) and abs(value) >= 2**63:
                raise GraphQueryError("number out of range", i)
            toks.append(_Tok("number", value, i))
            i = m.end()
        elif m := _IDENT.match(text, i):
            toks.append(_Tok("ident", m.group(), i))
            i = m.end()
        else:
            p = next((p for p in _PUNCT if text.startswith(p, i)), None)
            if p is None and c in "[]-":
                raise GraphQueryError(f"unexpected {c!r}: edges are '-[...]->', '<-[...]-' or '-[...]-'", i)
            if p is None:
                raise GraphQueryError(f"unexpected character {c!r}", i)
            toks.append(_Tok("punct", p, i))
            i += len(p)
    toks.append(_Tok("end", None, n))
    return toks


class _Parser:
    def __init__(self, text: str) -> None:
        self.toks = _tokenize(text)
        self.i = 0
        self.vars: dict[str, str] = {}  # var -> node | edge

    def peek(self) -> _Tok:
        return self.toks[self.i]

    def take(self) -> _Tok:
        tok = self.toks[self.i]
        self.i += min(1, len(self.toks) - 1 - self.i)
        return tok

    def fail(self, message: str, tok: _Tok | None = None) -> GraphQueryError:
        tok = tok or self.peek()
        found = "end of query" if tok.kind == "end" else repr(tok.value)
        return GraphQueryError(f"{message}, found {found}", tok.pos)

    def accept(self, punct: str) -> bool:
        if self.peek().kind == "punct" and self.peek().value == punct:
            self.take()
            return True
        return False

    def expect(self, punct: str) -> None:
        if not self.accept(punct):
            raise self.fail(f"expected {punct!r}")

    def keyword(self, word: str) -> bool:
        tok = self.peek()
        if tok.kind == "ident" and tok.value.lower() == word:
            self.take()
            return True
        return False

    def ident(self, what: str) -> str:
        tok = self.peek()
        if tok.kind != "ident":
            raise self.fail(f"expected {what}")
        if what == "a variable" and tok.value.lower() in RESERVED:
            raise GraphQueryError(f"{tok.value!r} is a reserved word, not a variable", tok.pos)
        return str(self.take().value)

    def query(self) -> Query:
        if not self.keyword("match"):
            raise self.fail("expected MATCH")
        nodes, edges = [self.node()], []
        while self.peek().kind == "punct" and self.peek().value in ("-[", "<-["):
            if len(edges) == 2:
                raise self.fail("a pattern has at most two hops")
            edges.append(self.edge())
            nodes.append(self.node())
        where: list[Condition] = []
        if self.keyword("where"):
            where.append(self.cond())
            while self.keyword("and"):
                where.append(self.cond())
        if not self.keyword("return"):
            raise self.fail("expected WHERE or RETURN" if not where else "expected AND or RETURN")
        returns = [self.ret()]
        while self.accept(","):
            returns.append(self.ret())
        limit = DEFAULT_LIMIT
        if self.keyword("limit"):
            tok = self.take()
            if tok.kind != "number" or not isinstance(tok.value, int) or not 1 <= tok.value <= MAX_LIMIT:
                raise self.fail(f"LIMIT takes an integer in 1..{MAX_LIMIT}", tok)
            limit = tok.value
        if self.peek().kind != "end":
            raise self.fail("expected end of query")
        return Query(tuple(nodes), tuple(edges), tuple(where), tuple(returns), limit)

    def bind(self, var: str, kind: str, tok: _Tok) -> None:
        if var in self.vars and (kind == "edge" or self.vars[var] == "edge"):
            raise GraphQueryError(f"variable {var!r} is already bound", tok.pos)
        self.vars[var] = kind

    def node(self) -> NodePattern:
        self.expect("(")
        tok = self.peek()
        var = self.ident("a variable")
        self.bind(var, "node", tok)
        node_type = self.vocabulary(NODE_TYPES, "node type") if self.accept(":") else None
        props: list[tuple[Field, Value]] = []
        if self.accept("{"):
            while True:
                field = self.field("node")
                self.expect(":")
                props.append((field, self.value()))
                if not self.accept(","):
                    break
            self.expect("}")
        self.expect(")")
        return NodePattern(var, node_type, tuple(props))

    def edge(self) -> EdgePattern:
        opening = self.take().value
        var = None
        if self.peek().kind == "ident":
            tok = self.peek()
            var = self.ident("a variable")
            self.bind(var, "edge", tok)
        rel_type = self.vocabulary(RELATION_TYPES, "relation type") if self.accept(":") else None
        tok = self.take()
        if tok.kind != "punct" or tok.value not in ("]->", "]-"):
            raise self.fail("expected ']->' or ']-'", tok)
        if opening == "<-[" and tok.value == "]->":
            raise self.fail("an edge cannot point both ways; use '-[...]-' for either direction", tok)
        direction = "in" if opening == "<-[" else ("out" if tok.value == "]->" else "both")
        return EdgePattern(var, rel_type, direction)

    def vocabulary(self, allowed: tuple[str, ...], what: str) -> str:
        tok = self.peek()
        word = self.ident(f"a {what}")
        found = next((a for a in allowed if a.lower() == word.lower()), None)
        if found is None:
            raise GraphQueryError(f"unknown {what} {word!r}; expected one of {', '.join(allowed)}", tok.pos)
        return found

    def field(self, kind: str) -> Field:
        tok = self.peek()
        name = self.ident("a field name").lower()
        if kind == "node" and name == "properties":
            if not self.accept("."):
                raise self.fail("expected '.<key>' after 'properties'")
            return Field("properties", self.ident("a property key"))
        if name not in (NODE_FIELDS if kind == "node" else EDGE_FIELDS):
            allowed = NODE_FIELDS + ("properties.<key>",) if kind == "node" else EDGE_FIELDS
            raise GraphQueryError(f"unknown {kind} field {tok.value!r}; expected one of {', '.join(allowed)}",
                                  tok.pos)
        return Field(name)

    def var_ref(self) -> tuple[str, str]:
        tok = self.peek()
        var = self.ident("a variable")
        if var not in self.vars:
            raise GraphQueryError(f"unknown variable {var!r}", tok.pos)
        return var, self.vars[var]

    def cond(self) -> Condition:
        var, kind = self.var_ref()
        self.expect(".")
        field = self.field(kind)
        tok = self.peek()
        if tok.kind == "punct" and tok.value in OPS[:6]:
            op = self.take().value
        elif self.keyword("contains"):
            op = "CONTAINS"
        elif self.keyword("starts"):
            if not self.keyword("with"):
                raise self.fail("expected WITH after STARTS")
            op = "STARTS WITH"
        else:
            raise self.fail("expected a comparison operator")
        value_tok = self.peek()
        value = self.value()
        if op in ("CONTAINS", "STARTS WITH") and not isinstance(value, str):
            raise GraphQueryError(f"{op} takes a string", value_tok.pos)
        return Condition(var, field, op, value)

    def ret(self) -> ReturnItem:
        tok = self.peek()
        if tok.kind == "ident" and tok.value.lower() == "count":
            self.take()
            self.expect("(")
            self.expect("*")
            self.expect(")")
            return ReturnItem("count")
        var, kind = self.var_ref()
        if self.accept("."):
            return ReturnItem("field", var, self.field(kind))
        return ReturnItem("var", var)

    def value(self) -> Value:
        tok = self.peek()
        if tok.kind in ("string", "number"):
            return self.take().value  # type: ignore[no-any-return]
        if tok.kind == "ident" and tok.value.lower() in ("true", "false"):
            return self.take().value.lower() == "true"  # type: ignore[no-any-return]
        raise self.fail("expected a value (string, number, true or false)")


def parse(text: str) -> Query:
    """Parse a query; raises ``GraphQueryError`` (with the offending position) on any bad input."""
    if not isinstance(text, str):
        raise GraphQueryError("a query must be a string", 0)
    if len(text) > MAX_TEXT:
        raise GraphQueryError(f"query longer than {MAX_TEXT} characters", MAX_TEXT)
    return _Parser(text).query()


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
