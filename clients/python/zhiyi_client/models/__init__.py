"""Typed results. Every model keeps the server's whole answer in `raw`."""

from .base import Response
from .learning import Constraint, Gap, Gaps, MemoryValue, Skill, Skills, SkillTrial, VPropResult, WorldModel
from .memories import (
    BatchCommitResult, BatchEntryResult, CommitResult, ConflictRef, FeedbackResult, MemoryChange, PrefetchHit,
    RecallHit, RecallResult, VersionEntry, Versions,
)
from .push import PUSH_TYPES, PushMessage
from .system import Episode, EpisodeCommit, Health, Registration, Stats

__all__ = [
    "PUSH_TYPES", "BatchCommitResult", "BatchEntryResult", "CommitResult", "ConflictRef", "Constraint", "Episode",
    "EpisodeCommit", "FeedbackResult", "Gap", "Gaps", "Health", "MemoryChange", "MemoryValue", "PrefetchHit",
    "PushMessage", "RecallHit", "RecallResult", "Registration", "Response", "Skill", "SkillTrial", "Skills",
    "Stats", "VPropResult", "VersionEntry", "Versions", "WorldModel",
]
