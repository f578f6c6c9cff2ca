"""When a failed call is tried again, and after how long (no I/O here: both clients share it).

A call is retried only when trying again cannot do harm:

- a read, and a write that carries an `Idempotency-Key` (the server answers a repeat with the
  original result and appends nothing), on a connection failure, 429, 502, 503 and 504;
- a write the server keeps no idempotency record for (admin actions such as `forget`, `tick`,
  `consolidate`) only when the server certainly did nothing: the connection was refused before the
  request went out, 429, 503 `unavailable`/`primary_unreachable`, 504 `projection_lag` (it waits
  before acting);
- never another 4xx, a 500, or 503 `log_reset` (an operator must run `zhiyi replay --in-place`).

Delays grow exponentially from `base_delay` to at most `max_delay`, with jitter so that many clients
failing together do not come back together; a `Retry-After` from the server is a lower bound, and a
`Retry-After` longer than `max_retry_after` is not waited for (the error is raised instead).
"""

from __future__ import annotations

import enum
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from .errors import ConnectionFailed, RateLimited, Unavailable, ZhiyiError, retry_after_seconds


class Kind(enum.Enum):
    """What a call does to the server, which decides what may be retried."""

    READ = "read"
    WRITE = "write"                 # appends, without an idempotency record on the server
    KEYED_WRITE = "keyed_write"     # appends, with an `Idempotency-Key` reused on every retry


#: 503 codes that mean the request was not acted on at all
_NOTHING_DONE_503 = frozenset({"unavailable", "primary_unreachable"})
_TRANSIENT_STATUS = frozenset({429, 502, 503, 504})


def is_retryable(kind: Kind, error: ZhiyiError) -> bool:
    """Whether `error` (from one attempt of a call of `kind`) may be retried; see the module docstring."""
    if isinstance(error, ConnectionFailed):
        return kind is not Kind.WRITE or not error.sent
    status = error.status
    if status not in _TRANSIENT_STATUS or error.code == "log_reset":
        return False
    if kind is not Kind.WRITE:
        return True
    return (status == 429 or (status == 503 and error.code in _NOTHING_DONE_503)
            or (status == 504 and error.code == "projection_lag"))


@dataclass(frozen=True)
class RetryPolicy:
    """`retries` is the number of retries after the first attempt (0: try once)."""

    retries: int = 3
    base_delay: float = 0.25
    max_delay: float = 8.0
    max_retry_after: float = 30.0
    jitter: Callable[[], float] = field(default=random.random, compare=False, repr=False)

    def backoff(self, retry: int) -> float:
        """The pause before retry number `retry` (1-based): base x 2^(retry-1), capped, then scaled by
        a random factor in [0.5, 1] (so the cap is an upper bound)."""
        delay = min(self.max_delay, self.base_delay * (2 ** max(0, retry - 1)))
        return float(delay * (0.5 + 0.5 * self.jitter()))

    def delay(self, kind: Kind, error: ZhiyiError, retry: int) -> float | None:
        """Seconds to wait before retry number `retry` after `error`, or None: raise it."""
        if retry > self.retries or not is_retryable(kind, error):
            return None
        pause = self.backoff(retry)
        if isinstance(error, (RateLimited, Unavailable)):
            hint = retry_after_seconds(error.headers)
            if hint is not None:
                if hint > self.max_retry_after:
                    return None
                pause = max(pause, hint)
        return pause


class Attempts:
    """The retry state of one logical call: `next_delay(error)` after each failed attempt gives the
    pause before the next one, or re-raises `error` when the call is given up."""

    def __init__(self, policy: RetryPolicy, kind: Kind) -> None:
        self.policy = policy
        self.kind = kind
        self.retries = 0

    def next_delay(self, error: ZhiyiError) -> float:
        delay = self.policy.delay(self.kind, error, self.retries + 1)
        if delay is None:
            raise error
        self.retries += 1
        return delay
