"""Idempotency keys of the write side: scopes, the key of a registration, the 422 of a reused key.

An append with an idempotency key is answered from its record (kept 24 h by append.lua) when the key
was seen: the original positions and result, nothing appended again. Handlers check the record
before deciding when the original change moved the state the decision reads (a retried register
must not find its own agent taken, a retried correction its own version moved).
"""

from __future__ import annotations

import hashlib

import orjson

from commands.errors import IdempotencyKeyReused
from commands.model import IdempotencyRequest, RegisterAgent
from events.redis.store import Idempotency

REGISTER_SCOPE = "zhiyi-register"
"""Idempotency scope of registrations (`zhiyi*` ids are reserved, so no agent shares it)."""
ADMIN_SCOPE = "zhiyi-admin"
"""Idempotency scope of the admin key's own writes (synonyms)."""


def key_reused(idempotency: Idempotency | None) -> IdempotencyKeyReused:
    return IdempotencyKeyReused("this Idempotency-Key was already used with a different request body",
                                {"idempotency_key": idempotency.key if idempotency else ""})


def register_idempotency(cmd: RegisterAgent, idem: IdempotencyRequest | None) -> Idempotency:
    """The client's key, else one derived from the request itself (the same registration retried
    without a key within the window answers the same api_key)."""
    if idem is not None:
        return Idempotency(REGISTER_SCOPE, idem.key, idem.fingerprint)
    fingerprint = hashlib.sha256(orjson.dumps(["register", cmd.agent_id, cmd.agent_type, cmd.namespace])).hexdigest()
    return Idempotency(REGISTER_SCOPE, "request:" + fingerprint, fingerprint)
