"""Turning JSON request bodies into validated commands (types, sizes, vocabularies).

Everything is validated before anything is appended; errors name the offending field.
"""

from __future__ import annotations

import re
from typing import Any, overload

from commands.error_codes import ErrorCode
from commands.errors import InvalidCommand
from commands.model import (
    AddSynonyms, BatchCommit, CommitMemory, CorrectMemory, DeleteMemory, DeprecateMemory, GiveFeedback, Limits,
    RegisterAgent,
)
from events.vocabulary import (
    CATEGORIES, DECAY_CLASS_BY_CATEGORY, DECAY_CLASSES, DEFAULT_CATEGORY, DEFAULT_SOURCE, DEFAULT_TIER, KINDS,
    TIERS,
)

AGENT_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
NAMESPACE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
MEMORY_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")
IDEMPOTENCY_KEY_RE = re.compile(r"^[\x21-\x7e]{1,128}$")
TRACE_ID_MAX = 128
TRACE_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,127}$")   # a decision trace (seed 6.3)
MAX_VERSION = 2**31 - 1
# "Not blank" = has a character that no engine counts as white space (Python's str.isspace, ECMA-262's
# \s and Unicode White_Space differ on \x1c-\x1f, \x85 and \ufeff): the API document states the same class.
NON_BLANK_RE = re.compile("[^ \t\n\r\x0b\x0c\x1c-\x1f\x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000\ufeff]")
CONTROL_CHARS_RE = re.compile(r"[\x00-\x1f\x7f-\x9f]")
# Ids the system acts as itself (the admin key, reactions, the scheduler, replicas): no agent may take them,
# or its idempotency keys and events would share their space.
RESERVED_AGENT_IDS = frozenset({"admin", "reaction", "scheduler", "system", "replica"})
RESERVED_AGENT_PREFIX = "zhiyi"

COMMIT_FIELDS = frozenset({"content", "category", "decay_class", "namespace", "tier", "kind", "source", "tags",
                           "depends_on", "derived_from", "session_id", "agent_id"})
MAX_SESSION_ID_CHARS = 128


def _fail(field: str, message: str, **extra: Any) -> InvalidCommand:
    return InvalidCommand(f"{field}: {message}", {"field": field, **extra})


def is_text(value: str) -> bool:
    """Not blank: at least one character that is not white space by any definition (NON_BLANK_RE)."""
    return NON_BLANK_RE.search(value) is not None


def is_reserved_agent_id(agent_id: str) -> bool:
    return agent_id in RESERVED_AGENT_IDS or agent_id.startswith(RESERVED_AGENT_PREFIX)


def required_text(body: dict[str, Any], field: str) -> str:
    """A required, non-blank string field."""
    value = present(body, field)
    if value is None:
        raise _fail(field, "is required")
    if not isinstance(value, str):
        raise _fail(field, "must be a string")
    if not is_text(value):
        raise _fail(field, "must not be empty")
    return value


def present(body: dict[str, Any], field: str) -> Any:
    """The field's value, None when absent; an explicit JSON null is refused (the document has no nulls)."""
    if field not in body:
        return None
    value = body[field]
    if value is None:
        raise _fail(field, "must not be null (leave the field out instead)")
    return value


def require_object(body: Any, what: str = "body") -> dict[str, Any]:
    if not isinstance(body, dict):
        raise _fail(what, "must be a JSON object")
    return body


@overload
def opt_str(body: dict[str, Any], field: str, *, max_chars: int, default: str,
            pattern: re.Pattern[str] | None = None, choices: tuple[str, ...] | None = None) -> str: ...
@overload
def opt_str(body: dict[str, Any], field: str, *, max_chars: int, default: None = None,
            pattern: re.Pattern[str] | None = None, choices: tuple[str, ...] | None = None) -> str | None: ...


def opt_str(body: dict[str, Any], field: str, *, max_chars: int, default: str | None = None,
            pattern: re.Pattern[str] | None = None, choices: tuple[str, ...] | None = None) -> str | None:
    value = present(body, field)
    if value is None:
        return default
    if not isinstance(value, str):
        raise _fail(field, "must be a string")
    if len(value) > max_chars:
        raise _fail(field, f"must be at most {max_chars} characters", limit=max_chars)
    if pattern is not None and not pattern.fullmatch(value):
        raise _fail(field, f"has an invalid format (expected {pattern.pattern})")
    if choices is not None and value not in choices:
        raise _fail(field, f"must be one of {', '.join(choices)}", allowed=list(choices))
    return value


@overload
def opt_int(body: dict[str, Any], field: str, *, minimum: int, maximum: int, default: int) -> int: ...
@overload
def opt_int(body: dict[str, Any], field: str, *, minimum: int, maximum: int, default: None = None) -> int | None: ...


def opt_int(body: dict[str, Any], field: str, *, minimum: int, maximum: int, default: int | None = None) -> int | None:
    value = present(body, field)
    if value is None:
        return default
    if isinstance(value, float) and value.is_integer():  # JSON has one number type: 3.0 is the integer 3
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise _fail(field, "must be an integer")
    if not minimum <= value <= maximum:
        raise _fail(field, f"must be between {minimum} and {maximum}", minimum=minimum, maximum=maximum)
    return value


def opt_float(body: dict[str, Any], field: str, *, minimum: float, maximum: float) -> float | None:
    value = present(body, field)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise _fail(field, "must be a number")
    if not minimum <= value <= maximum:
        raise _fail(field, f"must be between {minimum} and {maximum}", minimum=minimum, maximum=maximum)
    return float(value)


def str_list(body: dict[str, Any], field: str, *, max_items: int, max_chars: int,
             pattern: re.Pattern[str] | None = None) -> tuple[str, ...]:
    value = present(body, field)
    if value is None:
        return ()
    if not isinstance(value, list):
        raise _fail(field, "must be a list of strings")
    if len(value) > max_items:
        raise _fail(field, f"must have at most {max_items} items", limit=max_items)
    out: list[str] = []
    for i, item in enumerate(value):
        if not isinstance(item, str) or not is_text(item):
            raise _fail(field, f"item {i} must be a non-empty string")
        if len(item) > max_chars:
            raise _fail(field, f"item {i} must be at most {max_chars} characters", limit=max_chars)
        if pattern is not None and not pattern.fullmatch(item):
            raise _fail(field, f"item {i} has an invalid format")
        if item not in out:
            out.append(item)
    return tuple(out)


def parse_register(body: Any) -> RegisterAgent:
    body = require_object(body)
    agent_id = opt_str(body, "agent_id", max_chars=64, pattern=AGENT_ID_RE)
    if agent_id is None:
        raise _fail("agent_id", "is required")
    if is_reserved_agent_id(agent_id):
        raise InvalidCommand(f"agent_id: {agent_id} is reserved for the system "
                             f"({', '.join(sorted(RESERVED_AGENT_IDS))} and ids starting with {RESERVED_AGENT_PREFIX})",
                             {"field": "agent_id", "agent_id": agent_id}, code=ErrorCode.RESERVED_AGENT_ID)
    agent_type = opt_str(body, "agent_type", max_chars=64, default="generic") or "generic"
    namespace = opt_str(body, "namespace", max_chars=64, pattern=NAMESPACE_RE)
    return RegisterAgent(agent_id=agent_id, agent_type=agent_type, namespace=namespace)


def parse_commit(body: Any, limits: Limits) -> CommitMemory:
    body = require_object(body)
    content = _content(body, limits)
    category = opt_str(body, "category", max_chars=32, default=DEFAULT_CATEGORY, choices=CATEGORIES)
    decay_class = opt_str(body, "decay_class", max_chars=32, choices=DECAY_CLASSES) \
        or DECAY_CLASS_BY_CATEGORY[category]
    return CommitMemory(
        content=content,
        category=category,
        decay_class=decay_class,
        namespace=opt_str(body, "namespace", max_chars=64, pattern=NAMESPACE_RE),
        tier=opt_str(body, "tier", max_chars=16, default=DEFAULT_TIER, choices=TIERS),
        kind=opt_str(body, "kind", max_chars=4, default="L1", choices=KINDS),
        source=(opt_str(body, "source", max_chars=limits.max_source_chars, default=DEFAULT_SOURCE)
                or DEFAULT_SOURCE).strip() or DEFAULT_SOURCE,
        tags=str_list(body, "tags", max_items=limits.max_tags, max_chars=limits.max_tag_chars),
        depends_on=str_list(body, "depends_on", max_items=limits.max_depends_on, max_chars=128,
                            pattern=MEMORY_ID_RE),
        derived_from=_derived_from(body, limits),
        session_id=opaque_id(body, "session_id", MAX_SESSION_ID_CHARS),
    )


def _derived_from(body: dict[str, Any], limits: Limits) -> str:
    """The client's opaque episode id (conversation, session, task): see `opaque_id`; absent = "" (no
    episode). Scoped to the memory's namespace."""
    return opaque_id(body, "derived_from", limits.max_derived_from_chars)


def opaque_id(body: dict[str, Any], field: str, max_chars: int) -> str:
    """A client-chosen opaque id (an episode's): not blank, no control characters, at most `max_chars`;
    absent = ""."""
    value = opt_str(body, field, max_chars=max_chars)
    if value is None:
        return ""
    if not is_text(value):
        raise _fail(field, "must not be empty (leave the field out instead)")
    if CONTROL_CHARS_RE.search(value):
        raise _fail(field, "must not contain control characters")
    return value


def required_list(body: dict[str, Any], field: str, *, max_items: int, items: str) -> list[Any]:
    """A required, non-empty list of at most `max_items` (`items` names them in the error)."""
    value = present(body, field)
    if value is None:
        raise _fail(field, "is required")
    if not isinstance(value, list):
        raise _fail(field, f"must be a list of {items}")
    if not value:
        raise _fail(field, "must not be empty")
    if len(value) > max_items:
        raise _fail(field, f"must have at most {max_items} items", limit=max_items)
    return value


def parse_batch(body: Any, limits: Limits) -> BatchCommit:
    body = require_object(body)
    entries = required_list(body, "entries", max_items=limits.max_batch, items="memory objects")
    parsed = []
    for i, entry in enumerate(entries):
        try:
            parsed.append(parse_commit(entry, limits))
        except InvalidCommand as exc:
            raise InvalidCommand(f"entries[{i}].{exc.message}", {**exc.details, "index": i}) from None
    return BatchCommit(tuple(parsed))


def parse_delete(memory_id: str, body: dict[str, Any]) -> DeleteMemory:
    if not MEMORY_ID_RE.fullmatch(memory_id or ""):
        raise _fail("memory_id", "has an invalid format")
    return DeleteMemory(
        memory_id=memory_id,
        expected_version=opt_int(body, "expected_version", minimum=1, maximum=MAX_VERSION),
        reason=opt_str(body, "reason", max_chars=1_000, default="") or "",
    )


def _memory_id(body: dict[str, Any]) -> str:
    memory_id = opt_str(body, "memory_id", max_chars=128)
    if memory_id is None:
        raise _fail("memory_id", "is required")
    if not MEMORY_ID_RE.fullmatch(memory_id):
        raise _fail("memory_id", "has an invalid format")
    return memory_id


def _content(body: dict[str, Any], limits: Limits) -> str:
    content = required_text(body, "content")
    if len(content) > limits.max_content_chars:
        raise _fail("content", f"must be at most {limits.max_content_chars} characters",
                    limit=limits.max_content_chars, length=len(content))
    if "\x00" in content:
        raise _fail("content", "must not contain NUL characters")
    return content


def _reason(body: dict[str, Any], *, required: bool) -> str:
    raw = opt_str(body, "reason", max_chars=1_000) or ""
    reason = raw.strip()
    if required and not is_text(raw):
        raise _fail("reason", "is required and must not be empty")
    return reason


def parse_feedback(body: Any, verdict: str) -> GiveFeedback:
    """POST /feedback/useful and /feedback/not-useful: {memory_id, reason?}."""
    body = require_object(body)
    return GiveFeedback(_memory_id(body), verdict, _reason(body, required=False))


def parse_deprecate(body: Any) -> DeprecateMemory:
    """POST /feedback/deprecate: {memory_id, reason, expected_version?}."""
    body = require_object(body)
    return DeprecateMemory(_memory_id(body), _reason(body, required=True),
                           opt_int(body, "expected_version", minimum=1, maximum=MAX_VERSION))


def parse_correct(body: Any, limits: Limits) -> CorrectMemory:
    """POST /feedback/correct: {memory_id, content, reason, source?, trigger?, expected_version?}."""
    body = require_object(body)
    return CorrectMemory(
        memory_id=_memory_id(body), content=_content(body, limits), reason=_reason(body, required=True),
        source=(opt_str(body, "source", max_chars=limits.max_source_chars) or "").strip(),
        trigger=(opt_str(body, "trigger", max_chars=200) or "").strip(),
        expected_version=opt_int(body, "expected_version", minimum=1, maximum=MAX_VERSION))


def parse_add_synonyms(body: Any, limits: Limits) -> AddSynonyms:
    """{term, synonyms: [...], namespace?}: non-empty strings, no control characters, bounded."""
    body = require_object(body)
    term = opt_str(body, "term", max_chars=limits.max_synonym_chars)
    if term is None or not is_text(term):
        raise _fail("term", "is required and must not be empty")
    if "synonyms" not in body:
        raise _fail("synonyms", "is required")
    synonyms = str_list(body, "synonyms", max_items=limits.max_synonyms, max_chars=limits.max_synonym_chars)
    if not synonyms:
        raise _fail("synonyms", "must not be empty")
    for field, values in (("term", (term,)), ("synonyms", synonyms)):
        if any(CONTROL_CHARS_RE.search(v) for v in values):
            raise _fail(field, "must not contain control characters")
    namespace = opt_str(body, "namespace", max_chars=64, pattern=NAMESPACE_RE, default="shared") or "shared"
    return AddSynonyms(term.strip(), tuple(s.strip() for s in synonyms), namespace)


def parse_idempotency_key(value: str | None) -> str | None:
    if value is None:
        return None
    if not IDEMPOTENCY_KEY_RE.fullmatch(value):
        raise _fail("Idempotency-Key", "must be 1-128 printable ASCII characters")
    return value
