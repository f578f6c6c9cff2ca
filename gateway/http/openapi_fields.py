"""Schema pieces shared by the OpenAPI fragments, built from the validators' own patterns and limits
so the document and the validation stay one truth (schemathesis checks both ways:
tests/bench/schemathesis_run.py). Request objects are closed (`additionalProperties: false`): the
server answers 400 `unknown_field` to any name they do not list (gateway/http/request_schema.py)."""

from __future__ import annotations

from typing import Any

from commands.model import Limits
from commands.parsing import (
    AGENT_ID_RE, CONTROL_CHARS_RE, IDEMPOTENCY_KEY_RE, MAX_VERSION, MEMORY_ID_RE, NAMESPACE_RE, NON_BLANK_RE,
    RESERVED_AGENT_IDS, RESERVED_AGENT_PREFIX, TRACE_ID_RE,
)

LIMITS = Limits()
_NS = NAMESPACE_RE.pattern.strip("^$")

POSITION = {"type": "string", "pattern": r"^[0-9]{1,20}-[0-9]{1,20}$",
            "description": "Stream position (opaque; compare as (ms, seq))"}
AFTER = {"type": "string", "pattern": r"^([0-9]{1,20}-[0-9]{1,20})?$",
         "description": "a position returned by a write (not beyond the end of the log: 400); wait until the "
                        "projections this endpoint reads include it; '' = do not wait"}
AGENT_ID = {"type": "string", "pattern": AGENT_ID_RE.pattern}
AGENT_ACT = {**AGENT_ID, "description": "admin key only: the agent to act for (an agent key may name itself)"}
NEW_AGENT_ID = {**AGENT_ID, "not": {"anyOf": [{"enum": sorted(RESERVED_AGENT_IDS)},
                                              {"pattern": f"^{RESERVED_AGENT_PREFIX}"}]},
                "description": f"not one of the reserved ids ({', '.join(sorted(RESERVED_AGENT_IDS))}, "
                               f"{RESERVED_AGENT_PREFIX}*): 400 reserved_agent_id"}
NAMESPACE = {"type": "string", "pattern": NAMESPACE_RE.pattern}
NAMESPACES = {"type": "array", "maxItems": LIMITS.max_include_namespaces, "items": NAMESPACE}
NAMESPACES_CSV = {"type": "string", "pattern": f"^({_NS}(,{_NS}){{0,{LIMITS.max_include_namespaces - 1}}})?$",
                  "description": "comma-separated namespaces (repeatable)"}
MEMORY_ID = {"type": "string", "pattern": MEMORY_ID_RE.pattern}
VERSION = {"type": "integer", "minimum": 1, "maximum": MAX_VERSION}
IDEMPOTENCY_KEY = {"type": "string", "pattern": IDEMPOTENCY_KEY_RE.pattern}
TRACE_ID = {"type": "string", "pattern": TRACE_ID_RE.pattern,
            "description": "the decision trace this recall serves (seed 6.3): POST /api/v1/trace/vprop rewards it"}
BOOLEAN = {"type": "boolean"}


def text(max_length: int, *, blank: bool = True, control: bool = True, **extra: Any) -> dict:
    """A string of at most `max_length` characters; `blank=False`: with a character that is not white
    space (NON_BLANK_RE, unanchored); `control=False`: without control characters (C0, DEL, C1)."""
    schema: dict[str, Any] = {"type": "string", "maxLength": max_length, **extra}
    if not blank:
        schema["minLength"] = 1
        schema["pattern"] = NON_BLANK_RE.pattern
    if not control:
        schema["not"] = {"pattern": CONTROL_CHARS_RE.pattern}
    return schema


CONTENT = {**text(LIMITS.max_content_chars, blank=False), "not": {"pattern": "\\x00"},
           "description": "not blank, no NUL character"}
TAGS = {"type": "array", "maxItems": LIMITS.max_tags, "items": text(LIMITS.max_tag_chars, blank=False)}


def closed(properties: dict[str, Any], *required: str, **extra: Any) -> dict:
    """A request object: these fields only (`additionalProperties: false`)."""
    schema: dict[str, Any] = {"type": "object", "properties": properties, "additionalProperties": False, **extra}
    if required:
        schema["required"] = list(required)
    return schema


def query(name: str, schema: dict, *, required: bool = False, description: str = "") -> dict:
    param: dict[str, Any] = {"name": name, "in": "query", "required": required, "schema": schema}
    if description:
        param["description"] = description
    return param


def query_int(name: str, minimum: int, maximum: int, default: int | None = None) -> dict:
    schema: dict[str, Any] = {"type": "integer", "minimum": minimum, "maximum": maximum}
    if default is not None:
        schema["default"] = default
    return query(name, schema)


AFTER_QUERY = query("after", AFTER)
AFTER_HEADER = {"name": "X-Zhiyi-After", "in": "header", "required": False, "schema": AFTER}
AGENT_QUERY = query("agent_id", AGENT_ACT)
IDEMPOTENCY = {"name": "Idempotency-Key", "in": "header", "required": False, "schema": IDEMPOTENCY_KEY,
               "description": "scoped per agent, kept 24 h; a repeat returns the original result (200), "
                              "the same key with another body is refused (422)"}
