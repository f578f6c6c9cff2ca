"""Who may read and write what (DESIGN.md §5): the acting identity and the namespaces a read covers.

The one home of the visibility rule. An agent writes its own two namespaces (`<id>-main`,
`<id>-ephemeral`) and `shared`; it reads those and, when it names them, other agents' non-ephemeral
namespaces. Another agent's `-ephemeral` namespace is invisible: a memory there reads as absent
(404), never as forbidden, and naming that namespace in a read scope is forbidden (403).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Awaitable, Callable, Protocol

from commands.errors import Forbidden
from events.vocabulary import EPHEMERAL_SUFFIX, SHARED_NAMESPACE

#: The namespaces an evaluation query of `agent_id` runs in (`scope_resolver`).
ScopeOf = Callable[[str], Awaitable[list[str]]]


@dataclass(frozen=True, slots=True)
class Actor:
    """Who a request acts as: a registered agent, possibly through the admin key (`by='admin'`)."""

    agent_id: str
    main_namespace: str
    ephemeral_namespace: str
    by: str = ""

    @property
    def own_namespaces(self) -> tuple[str, str]:
        return (self.main_namespace, self.ephemeral_namespace)

    def can_write(self, namespace: str) -> bool:
        """Own namespaces and `shared`."""
        return namespace == SHARED_NAMESPACE or namespace in self.own_namespaces

    def can_read(self, namespace: str) -> bool:
        """Own namespaces, shared, and other agents' non-ephemeral namespaces (opt-in at recall).
        False exactly for another agent's `-ephemeral` namespace: what lives there is invisible."""
        return self.can_write(namespace) or not namespace.endswith(EPHEMERAL_SUFFIX)


def resolve_scope(actor: Actor | None, namespace: str | None, include: tuple[str, ...] | list[str]) -> list[str]:
    """The namespaces a read searches: `namespace` alone when given, else own + shared (only
    `shared` for nobody, the admin key acting for no agent) plus the `include`d ones, in order,
    without repeats. Forbidden (403) when a named namespace is another agent's ephemeral one."""
    def check(ns: str) -> None:
        if actor is not None and not actor.can_read(ns):
            raise Forbidden(f"namespace {ns} is another agent's ephemeral namespace", {"namespace": ns})

    if namespace is not None:
        check(namespace)
        return [namespace]
    scope = [*actor.own_namespaces, SHARED_NAMESPACE] if actor is not None else [SHARED_NAMESPACE]
    for ns in include:
        check(ns)
        if ns not in scope:
            scope.append(ns)
    return scope


class ActorLookup(Protocol):
    """What resolving an agent's scope needs (`commands.handlers.CommandService` is one)."""

    async def require_actor(self, agent_id: str, *, by: str = "") -> Actor: ...


def scope_resolver(actors: ActorLookup, namespace: str | None, *, agent_key: str | None) -> ScopeOf:
    """Namespaces an evaluation query runs in, exactly as a recall by its agent would search them
    (admin key: the query's `agent_id`, or `shared` / `namespace` without one; agent key: always
    itself)."""

    async def scope_of(agent_id: str) -> list[str]:
        if agent_key is not None:
            actor: Actor | None = await actors.require_actor(agent_key)
        else:
            actor = await actors.require_actor(agent_id, by="admin") if agent_id else None
        return resolve_scope(actor, namespace, ())

    return scope_of
