"""Results of the self-improvement endpoints: V-value propagation, skills, knowledge gaps and the
L3 world model."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ._fields import JSON, flag, integer, number, obj, objects, opt_number, opt_text, text, texts
from .base import raw_field


@dataclass(frozen=True, kw_only=True)
class MemoryValue:
    """A memory's V-value after a reward was propagated back along the trace that recalled it."""

    memory_id: str
    v_value: float

    @classmethod
    def from_json(cls, data: JSON) -> MemoryValue:
        return cls(memory_id=text(data, "memory_id"), v_value=number(data, "v_value"))


@dataclass(frozen=True, kw_only=True)
class VPropResult:
    """`POST /api/v1/trace/vprop`."""

    trace_id: str
    reward: float
    memories: tuple[MemoryValue, ...]
    position: str
    raw: dict[str, Any] = raw_field()

    @classmethod
    def from_json(cls, data: Any) -> VPropResult:
        d = obj(data)
        return cls(trace_id=text(d, "trace_id"), reward=number(d, "reward"),
                   memories=tuple(MemoryValue.from_json(m) for m in objects(d, "memories")),
                   position=text(d, "position"), raw=d)


@dataclass(frozen=True, kw_only=True)
class Skill:
    """A crystallised skill: `eta` its estimated success rate, (`alpha`, `beta`) its Beta posterior."""

    name: str
    memory_id: str
    pattern_id: str | None
    status: str
    eta: float
    alpha: float
    beta: float
    trials: int
    successes: int
    failures: int
    content: str
    raw: dict[str, Any] = raw_field()

    @classmethod
    def from_json(cls, data: Any) -> Skill:
        d = obj(data)
        return cls(name=text(d, "name"), memory_id=text(d, "memory_id"), pattern_id=opt_text(d, "pattern_id"),
                   status=text(d, "status"), eta=number(d, "eta"), alpha=number(d, "alpha"),
                   beta=number(d, "beta"), trials=integer(d, "trials"), successes=integer(d, "successes"),
                   failures=integer(d, "failures"), content=text(d, "content"), raw=d)


@dataclass(frozen=True, kw_only=True)
class Skills:
    """`GET /api/v1/skills`: iterate it for the skills."""

    skills: tuple[Skill, ...]
    position: str | None
    raw: dict[str, Any] = raw_field()

    @classmethod
    def from_json(cls, data: Any) -> Skills:
        d = obj(data)
        return cls(skills=tuple(Skill.from_json(s) for s in objects(d, "skills")),
                   position=opt_text(d, "position"), raw=d)

    def __iter__(self) -> Iterator[Skill]:
        return iter(self.skills)

    def __len__(self) -> int:
        return len(self.skills)


@dataclass(frozen=True, kw_only=True)
class SkillTrial:
    """`POST /api/v1/skills/{name}/trial`: the skill after the trial was recorded."""

    name: str
    eta: float
    status: str
    alpha: float
    beta: float
    trials: int
    position: str
    raw: dict[str, Any] = raw_field()

    @classmethod
    def from_json(cls, data: Any) -> SkillTrial:
        d = obj(data)
        return cls(name=text(d, "name"), eta=number(d, "eta"), status=text(d, "status"), alpha=number(d, "alpha"),
                   beta=number(d, "beta"), trials=integer(d, "trials"), position=text(d, "position"), raw=d)


@dataclass(frozen=True, kw_only=True)
class Gap:
    """A knowledge gap: queries an agent recalled without a good answer (`status` open or closed;
    `memory_ids` the memories that filled it)."""

    gap_id: str
    agent_id: str | None
    query: str
    gap_type: str | None
    status: str
    suggestion: str | None
    detected_at: str | None
    memory_ids: tuple[str, ...]
    position: str | None
    raw: dict[str, Any] = raw_field()

    @classmethod
    def from_json(cls, data: Any) -> Gap:
        d = obj(data)
        return cls(gap_id=text(d, "gap_id"), agent_id=opt_text(d, "agent_id"), query=text(d, "query"),
                   gap_type=opt_text(d, "gap_type"), status=text(d, "status"), suggestion=opt_text(d, "suggestion"),
                   detected_at=opt_text(d, "detected_at"), memory_ids=texts(d, "memory_ids"),
                   position=opt_text(d, "position"), raw=d)


@dataclass(frozen=True, kw_only=True)
class Gaps:
    """`GET /api/v1/gaps`: iterate it for the gaps; `closure_rate` = closed / detected (None before any)."""

    gaps: tuple[Gap, ...]
    count: int
    closure_rate: float | None
    position: str | None
    raw: dict[str, Any] = raw_field()

    @classmethod
    def from_json(cls, data: Any) -> Gaps:
        d = obj(data)
        gaps = tuple(Gap.from_json(g) for g in objects(d, "gaps"))
        return cls(gaps=gaps, count=integer(d, "count", len(gaps)), closure_rate=opt_number(d, "closure_rate"),
                   position=opt_text(d, "position"), raw=d)

    def __iter__(self) -> Iterator[Gap]:
        return iter(self.gaps)

    def __len__(self) -> int:
        return len(self.gaps)


@dataclass(frozen=True, kw_only=True)
class Constraint:
    """A constraint of the world model; `hard` ones must never be broken."""

    text: str
    hard: bool
    memory_id: str | None

    @classmethod
    def from_json(cls, data: JSON) -> Constraint:
        return cls(text=text(data, "text"), hard=flag(data, "hard"), memory_id=opt_text(data, "memory_id"))


@dataclass(frozen=True, kw_only=True)
class WorldModel:
    """`GET /api/v1/l3/worldmodel`: entities, their interactions and the constraints."""

    entities: tuple[dict[str, Any], ...]
    interactions: tuple[dict[str, Any], ...]
    constraints: tuple[Constraint, ...]
    position: str | None
    raw: dict[str, Any] = raw_field()

    @classmethod
    def from_json(cls, data: Any) -> WorldModel:
        d = obj(data)
        return cls(entities=tuple(objects(d, "entities")), interactions=tuple(objects(d, "interactions")),
                   constraints=tuple(Constraint.from_json(c) for c in objects(d, "constraints")),
                   position=opt_text(d, "position"), raw=d)
