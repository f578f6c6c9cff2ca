"""Which archives `zhiyi backup --prune` keeps (seed 4.3: 7 daily + 4 weekly): the newest archive of each
of the last 7 UTC days and of each of the last 4 ISO weeks, always the newest one, and every base a kept
incremental archive needs to be restored. Pure over (id, created, base) records."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timedelta

DAILY = 7
WEEKLY = 4


@dataclass(frozen=True, slots=True)
class Kept:
    backup_id: str
    created: datetime            # aware, UTC
    base: str = ""               # an incremental's base backup id


def keep(archives: list[Kept], now: datetime, *, daily: int = DAILY, weekly: int = WEEKLY) -> set[str]:
    """The ids to keep; every other archive may be deleted."""
    if not archives:
        return set()
    newest_first = sorted(archives, key=lambda a: a.created, reverse=True)
    kept = {newest_first[0].backup_id}
    days = {(now - timedelta(days=i)).date() for i in range(daily)}
    weeks = {(now - timedelta(weeks=i)).isocalendar()[:2] for i in range(weekly)}
    seen_days: set = set()
    seen_weeks: set = set()
    for a in newest_first:                     # the newest of each day and week in the windows
        day, week = a.created.date(), a.created.isocalendar()[:2]
        if day in days and day not in seen_days:
            kept.add(a.backup_id)
            seen_days.add(day)
        if week in weeks and week not in seen_weeks:
            kept.add(a.backup_id)
            seen_weeks.add(week)
    by_id = {a.backup_id: a for a in archives}
    for backup_id in list(kept):               # an incremental needs its whole chain
        base = by_id[backup_id].base
        while base and base in by_id and base not in kept:
            kept.add(base)
            base = by_id[base].base
    return kept
