"""LLM entity extraction (seed 2.5.3 source 1), a reaction on each commit and correction: the
configured chat model names the entities of the memory's content, and the answer is recorded as
an `entities.extracted` event for that version (the graph adds the entities; replay never calls
the model). The deterministic extractor (`projections.text.entities`) runs in the graph projector
regardless; this adds what rules cannot see (people, products, concepts). Only wired when
`LLM_ENDPOINT` is set. A spent budget, a refused request or an unusable answer records nothing
(logged), so a model outage never blocks the reactions."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson
import structlog

from commands.llm import BudgetExhausted, LLMError
from events.catalogue import EntitiesExtracted, MemoryCommitted, MemoryCorrected, new_event
from events.envelope import Event

log = structlog.get_logger(__name__)

KINDS = ("person", "organization", "product", "service", "location", "concept", "identifier", "version", "path",
         "port", "url", "event", "term")
MAX_ENTITIES = 30
MAX_NAME_CHARS = 100
MAX_CONTENT_CHARS = 6000
SYSTEM_PROMPT = (
    "You extract named entities from one note an AI agent stored. Answer with JSON only: "
    '{"entities": [{"kind": "<kind>", "name": "<exact name as written>"}]}. '
    f"kind is one of: {', '.join(KINDS)}. At most {MAX_ENTITIES} entities; no duplicates; keep names in the "
    "note's language (Chinese stays Chinese). No generic words.")


def parse_entities(answer: str) -> tuple[tuple[str, str], ...]:
    """(kind, name) pairs from the model's JSON answer; unknown kinds become `concept`. Raises
    ValueError when the answer is not the asked-for JSON."""
    doc = orjson.loads(answer)
    items = doc.get("entities") if isinstance(doc, dict) else None
    if not isinstance(items, list):
        raise ValueError("no 'entities' list in the answer")
    out: dict[str, tuple[str, str]] = {}
    for item in items:
        if not isinstance(item, dict):
            continue
        name, kind = item.get("name"), item.get("kind")
        if not isinstance(name, str) or not name.strip():
            continue
        name = " ".join(name.split())[:MAX_NAME_CHARS]
        kind = kind.strip().lower() if isinstance(kind, str) and kind.strip().lower() in KINDS else "concept"
        out.setdefault(f"{kind}:{name.casefold()}", (kind, name))
        if len(out) >= MAX_ENTITIES:
            break
    return tuple(out.values())


@dataclass
class LLMEntityPolicy:
    llm: Any                          # commands.llm.ChatClient
    name: str = "llm_entities"
    reads: tuple[str, ...] = ()

    def wants(self, event: Event) -> bool:
        return isinstance(event.data, (MemoryCommitted, MemoryCorrected)) and bool(event.data.content.strip())

    async def decide(self, event: Event) -> list[Event]:
        d = event.data
        version = 1 if isinstance(d, MemoryCommitted) else d.version
        try:
            answer = await self.llm.complete(SYSTEM_PROMPT, d.content[:MAX_CONTENT_CHARS])
            entities = parse_entities(answer)
        except BudgetExhausted as exc:
            log.warning("llm_entities.budget", memory_id=d.memory_id, error=str(exc))
            return []
        except (LLMError, ValueError) as exc:
            log.warning("llm_entities.failed", memory_id=d.memory_id, error=str(exc)[:300])
            return []
        if not entities:
            return []
        return [new_event(EntitiesExtracted(d.memory_id, d.namespace, version, entities, self.llm.model_id),
                          ns=d.namespace, agent="system", by="reaction")]
