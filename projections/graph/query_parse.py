"""Parsing the graph pattern language (grammar and semantics: `projections.graph.query`):
a tokenizer and a recursive-descent parser that build a `Query`, or raise `GraphQueryError` with
the offending position. No SQL here."""


from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Union

from projections.core.errors import InvalidQuery
from projections.graph.schema import NODE_TYPES, RELATION_TYPES


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
        nodes = [self.node()]
        edges: list[EdgePattern] = []
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
