"""Closed vocabularies and defaults of the memory model (seed 2.2, 3.3.1, 3.3.3, appendix B)."""

from __future__ import annotations

CATEGORIES = ("fact", "decision", "preference", "constraint", "pattern")
DECAY_CLASSES = ("system_fact", "user_pref", "proj_context", "tool_usage", "code_snippet")
TIERS = ("normal", "core")
KINDS = ("L1", "L2", "L3")

DEFAULT_CATEGORY = "fact"
DEFAULT_TIER = "normal"
DEFAULT_SOURCE = "agent_inference"

DECAY_RATE_PER_DAY = {  # appendix B
    "system_fact": 0.003,
    "user_pref": 0.005,
    "proj_context": 0.008,
    "tool_usage": 0.010,
    "code_snippet": 0.012,
}

# A memory's decay class, when the agent gives none, follows from its category.
DECAY_CLASS_BY_CATEGORY = {
    "fact": "system_fact",
    "preference": "user_pref",
    "decision": "proj_context",
    "constraint": "proj_context",
    "pattern": "tool_usage",
}

# Source trust weights of seed 3.3.3, with the English aliases of DESIGN.md §5.
SOURCE_TRUST = {
    "牧尘口头": 1.0, "user_verbal": 1.0,
    "牧尘飞书": 0.95, "user_chat": 0.95,
    "配置解析": 0.7, "config_parse": 0.7,
    "Agent推断": 0.5, "agent_inference": 0.5,
    "LLM蒸馏": 0.4, "llm_distill": 0.4,
}
UNKNOWN_SOURCE_TRUST = 0.5


def source_trust(source: str) -> float:
    return SOURCE_TRUST.get(source, UNKNOWN_SOURCE_TRUST)


SHARED_NAMESPACE = "shared"
MAIN_SUFFIX = "-main"
EPHEMERAL_SUFFIX = "-ephemeral"
