"""What a client is configured with, and the parts of a client the sync and async ones share."""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass
from typing import Any, Self, TypeVar

from .calls import Call, Prepared, finish, prepare, segment
from .positions import PositionTracker
from .retry import Attempts, RetryPolicy

T = TypeVar("T")


@dataclass(frozen=True)
class ClientConfig:
    """`consistent`: every read that takes `after=` is sent with the highest position this client's
    writes returned (read-your-writes); a call's own `after=` overrides it, `after=""` sends none.
    `tracker` holds that position; clients made with `with_key()` share it."""

    base_url: str
    api_key: str | None
    timeout: float = 30.0
    policy: RetryPolicy = dataclasses.field(default_factory=RetryPolicy)
    consistent: bool = True
    tracker: PositionTracker = dataclasses.field(default_factory=PositionTracker)

    @classmethod
    def build(cls, base_url: str, api_key: str | None, *, timeout: float, retries: int, consistent: bool,
              retry_policy: RetryPolicy | None, tracker: PositionTracker | None) -> ClientConfig:
        if not base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url must start with http:// or https://, got {base_url!r}")
        policy = retry_policy if retry_policy is not None else RetryPolicy(retries=retries)
        return cls(base_url.rstrip("/"), api_key, timeout, policy, consistent, tracker or PositionTracker())

    def prepare(self, call: Call[Any]) -> Prepared:
        return prepare(call, self.base_url, self.api_key, self.tracker.position if self.consistent else None)

    def with_key(self, api_key: str | None) -> ClientConfig:
        return dataclasses.replace(self, api_key=api_key)

    def socket_url(self, agent_id: str) -> str:
        return f"{self.base_url}/api/v1/ws/{segment(agent_id)}"


class ClientCore:
    """What both clients share besides the endpoints: the configuration, the read-your-writes
    position, `with_key()`, and the I/O-free ends of a call (prepare it, read its answer)."""

    config: ClientConfig
    _owner: bool = True       # False for a client `with_key()` made: it closes nothing it shares

    @property
    def position(self) -> str | None:
        """The highest position this client's writes (and those of its `with_key()` twins) returned:
        what its reads wait for."""
        return self.config.tracker.position

    def with_key(self, api_key: str | None) -> Self:
        """A client for another key (e.g. the agent an admin just registered) sharing this one's
        read-your-writes position (and, for the async client, its connection pool)."""
        twin = copy.copy(self)
        twin.config = self.config.with_key(api_key)
        twin._owner = False
        return twin

    def _start(self, call: Call[Any]) -> tuple[Prepared, Attempts]:
        """The request (sent unchanged on every retry: one idempotency key) and the retry state."""
        return self.config.prepare(call), Attempts(self.config.policy, call.kind)

    def _finish(self, call: Call[T], answer: tuple[int, dict[str, str], bytes]) -> T:
        status, headers, payload = answer
        return finish(call, status, headers, payload, self.config.tracker)
