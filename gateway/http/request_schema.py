"""The OpenAPI document as the list of names a request may carry: unknown query parameters and
unknown body fields answer 400 `unknown_field` (a typo such as `namspace` must not fall back to a
default in silence). Field *values* are validated by `commands.parsing` and the handlers; the
document states the same rules (schemathesis checks that the two agree: tests/bench/schemathesis_run.py).
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from aiohttp import web

from commands.error_codes import ErrorCode
from gateway.http.errors import ApiError


@dataclass(frozen=True, slots=True)
class OperationNames:
    """What one documented operation accepts: its query parameters and its JSON body's schema."""

    query: frozenset[str]
    body: dict[str, Any] | None


@lru_cache(maxsize=1)
def _operations() -> dict[tuple[str, str], OperationNames]:
    from gateway.http.openapi import openapi_document  # here: the document names the handlers' limits

    doc = openapi_document()
    out: dict[tuple[str, str], OperationNames] = {}
    for path, ops in doc["paths"].items():
        for method, op in ops.items():
            query = frozenset(p["name"] for p in op.get("parameters", []) if p.get("in") == "query")
            body = op.get("requestBody", {}).get("content", {}).get("application/json", {}).get("schema")
            out[(method.upper(), path)] = OperationNames(query, _resolve(body, doc) if body else None)
    return out


def _resolve(schema: Any, doc: dict) -> Any:
    """`schema` with every `$ref` replaced by its target (the request schemas are not recursive)."""
    if isinstance(schema, dict):
        if "$ref" in schema:
            name = schema["$ref"].rsplit("/", 1)[-1]
            return _resolve(doc["components"]["schemas"][name], doc)
        return {k: _resolve(v, doc) for k, v in schema.items()}
    if isinstance(schema, list):
        return [_resolve(v, doc) for v in schema]
    return schema


def operation_names(request: web.Request) -> OperationNames | None:
    route = request.match_info.route
    resource = route.resource
    if resource is None:
        return None
    method = "GET" if request.method == "HEAD" else request.method
    return _operations().get((method, resource.canonical))


def unknown_field(value: Any, schema: dict | None, prefix: str = "") -> str | None:
    """The first field of `value` that `schema` does not list (objects with additionalProperties:
    false, recursively through properties and array items), as a dotted path, or None."""
    if not isinstance(schema, dict):
        return None
    if isinstance(value, dict) and schema.get("additionalProperties") is False:
        props = schema.get("properties", {})
        for key, item in value.items():
            if key not in props:
                return f"{prefix}{key}"
            found = unknown_field(item, props[key], f"{prefix}{key}.")
            if found:
                return found
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            found = unknown_field(item, schema["items"], f"{prefix.rstrip('.')}[{i}].")
            if found:
                return found
    return None


def _fail(field: str, where: str) -> ApiError:
    what = "query parameter" if where == "query" else "field"
    return ApiError(400, ErrorCode.UNKNOWN_FIELD, f"{field}: unknown {what} (see /api/v1/openapi.json)",
                    {"field": field, "in": where})


def check_body_fields(request: web.Request, body: Any) -> None:
    names = operation_names(request)
    if names is None:
        return
    field = unknown_field(body, names.body)
    if field is not None:
        raise _fail(field, "body")


@web.middleware
async def unknown_query_middleware(request: web.Request, handler) -> web.StreamResponse:
    """Unknown query parameters answer 400 `unknown_field` on every documented route."""
    if request.query:
        names = operation_names(request)
        if names is not None:
            for key in request.query:
                if key not in names.query:
                    raise _fail(key, "query")
    return await handler(request)
