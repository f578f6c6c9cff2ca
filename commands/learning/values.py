"""V-value propagation (seed 6.3): a rewarded decision trace passes value back to the memories its
recalls served.

    V_t = alpha_m x R + (1 - alpha_m) x gamma x V_{t+1}        alpha_m = 1 / (useful_m + 1), gamma = 0.95

The trace's steps are its recalls in log order (t = 1..T); V_{T+1} = 0 (nothing follows the last
step). Walking back from the last step, each memory m served at step t gets
v_t(m) = alpha_m R + (1 - alpha_m) gamma V_{t+1}, and the step's value V_t is the mean of its
memories' v_t (what the step passes to the one before it). A memory served at several steps keeps
the value of its last one (closest to the outcome). alpha_m: the memory's useful feedback (agents,
one vote each) when the reward arrives: the more a memory is known to be useful, the less one
outcome moves it and the more it passes on.

Decay (seed 6.3): a value not updated for 90 days decays exponentially with a 30-day half-life,
computed at query time from the reward's time (`projections.memories.scores.value_now`, where the
ranking uses it).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Sequence

GAMMA = 0.95
REWARD_MIN, REWARD_MAX = -1.0, 1.0


@dataclass(frozen=True, slots=True)
class MemoryValue:
    memory_id: str
    v: float
    alpha: float
    step: int          # 1-based: the trace step it was valued at


def alpha(useful: int) -> float:
    return 1.0 / (max(0, useful) + 1)


def propagate(steps: Sequence[Sequence[str]], useful: Mapping[str, int], reward: float,
              gamma: float = GAMMA) -> list[MemoryValue]:
    """The value of every memory `steps` served (steps oldest first, each its memory ids), in the order
    first served."""
    valued: dict[str, MemoryValue] = {}
    after = 0.0                                  # V_{t+1}
    for t in range(len(steps), 0, -1):
        step = list(dict.fromkeys(steps[t - 1]))
        if not step:
            continue
        vs = []
        for mid in step:
            a = alpha(useful.get(mid, 0))
            v = a * reward + (1.0 - a) * gamma * after
            vs.append(v)
            valued.setdefault(mid, MemoryValue(mid, v, a, t))      # its last step wins (walking back)
        after = sum(vs) / len(vs)
    order = list(dict.fromkeys(mid for step in steps for mid in step))
    return [valued[mid] for mid in order if mid in valued]

