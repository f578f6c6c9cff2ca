"""Self-improvement: V-value propagation along decision traces, skills, knowledge gaps, the L3
world model."""

from __future__ import annotations

from ..calls import Call, fields, params, segment
from ..models import Gaps, Skills, SkillTrial, VPropResult, WorldModel
from ._build import get, keyed


def vprop(trace_id: str, reward: float, *, agent_id: str | None = None,
          idempotency_key: str | None = None) -> Call[VPropResult]:
    """Reward a decision trace (-1..1): the value is propagated back to the memories its recalls
    (made with `recall(..., trace_id=...)`) returned (`POST /api/v1/trace/vprop`)."""
    body = fields(trace_id=trace_id, reward=reward, agent_id=agent_id)
    return keyed("POST", "/api/v1/trace/vprop", VPropResult.from_json, body, idempotency_key)


def skills(*, status: str | None = None, after: str | None = None) -> Call[Skills]:
    """Crystallised skills (`GET /api/v1/skills`; status active, probation or retired)."""
    return get("/api/v1/skills", Skills.from_json, params(status=status), after=after)


def skill_trial(name: str, success: bool, *, agent_id: str | None = None,
                idempotency_key: str | None = None) -> Call[SkillTrial]:
    """Record one trial of a skill (`POST /api/v1/skills/{name}/trial`); unknown skill: `NotFound`."""
    body = fields(success=success, agent_id=agent_id)
    return keyed("POST", f"/api/v1/skills/{segment(name)}/trial", SkillTrial.from_json, body, idempotency_key)


def gaps(*, status: str | None = None, limit: int | None = None, agent_id: str | None = None,
         after: str | None = None) -> Call[Gaps]:
    """Knowledge gaps, newest first (`GET /api/v1/gaps`; status open, closed or all), and the closure
    rate over them."""
    return get("/api/v1/gaps", Gaps.from_json, params(status=status, limit=limit, agent_id=agent_id), after=after)


def worldmodel(*, after: str | None = None) -> Call[WorldModel]:
    """The L3 world model: entities, interactions, constraints (`GET /api/v1/l3/worldmodel`)."""
    return get("/api/v1/l3/worldmodel", WorldModel.from_json, after=after)
