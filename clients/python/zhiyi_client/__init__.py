"""zhiyi-client: the Python client of zhiyi (织忆), the shared memory service for LLM agents.

    from zhiyi_client import Zhiyi
    zy = Zhiyi("http://127.0.0.1:7821", api_key)
    zy.commit("ComfyUI 端口是 8189", tags=["comfyui"])
    for hit in zy.recall("which port does ComfyUI use"):   # reads its own write (after=)
        print(hit.score, hit.content)

`AsyncZhiyi` has the same methods as coroutines. See README.md for retries, read-your-writes and
the push listener.
"""

from .async_client import AsyncZhiyi
from .blocking import BlockingPushStream
from .errors import (
    BadRequest, Conflict, ConnectionFailed, Forbidden, IdempotencyKeyReused, NotFound, OutcomeUnknown,
    PayloadTooLarge, ProjectionLag, RateLimited, ServerError, Unauthorized, Unavailable, Unprocessable,
    VersionConflict, ZhiyiError,
)
from .models import (
    PUSH_TYPES, BatchCommitResult, BatchEntryResult, CommitResult, ConflictRef, Constraint, Episode, EpisodeCommit,
    FeedbackResult, Gap, Gaps, Health, MemoryChange, MemoryValue, PrefetchHit, PushMessage, RecallHit, RecallResult,
    Registration, Response, Skill, Skills, SkillTrial, Stats, VersionEntry, Versions, VPropResult, WorldModel,
)
from .positions import PositionTracker, is_position, later, position_key
from .push import PushStream
from .retry import Kind, RetryPolicy
from .sync_client import Zhiyi

__version__ = "0.1.0"

__all__ = [
    "PUSH_TYPES", "AsyncZhiyi", "BadRequest", "BatchCommitResult", "BatchEntryResult", "BlockingPushStream",
    "CommitResult", "Conflict", "ConflictRef", "ConnectionFailed", "Constraint", "Episode", "EpisodeCommit",
    "FeedbackResult", "Forbidden", "Gap", "Gaps", "Health", "IdempotencyKeyReused", "Kind", "MemoryChange", "MemoryValue",
    "NotFound", "OutcomeUnknown", "PayloadTooLarge", "PositionTracker", "PrefetchHit", "ProjectionLag",
    "PushMessage", "PushStream", "RateLimited", "RecallHit", "RecallResult", "Registration", "Response",
    "RetryPolicy", "ServerError", "Skill", "SkillTrial", "Skills", "Stats", "Unauthorized", "Unavailable",
    "Unprocessable", "VPropResult", "VersionConflict", "VersionEntry", "Versions", "WorldModel", "Zhiyi",
    "ZhiyiError", "__version__", "is_position", "later", "position_key",
]
