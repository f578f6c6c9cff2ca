"""The graph's part of the L3 world model (seed 6.6): its leading entities and how they interact.

- entities: `entity` nodes whose PageRank is at least the average node's (1.0 on the stored scale,
  `projections.graph.projector._store_pagerank`; every node has 1.0 until the first prune computes it),
  outside `-ephemeral` namespaces, highest PageRank first, then most mentioned;
- interactions between two of them: RELATES_TO when one memory mentions both (weight: how many do),
  DEPENDS_ON when a memory mentioning the first depends on one mentioning the second.

Read side only: a reaction (`commands.reactions.worldmodel`) decides when to take them and records them.
"""

from __future__ import annotations

import sqlite3
from typing import Any

import orjson

from projections.core.sqlite_reader import SqliteReader
from projections.graph.schema import DB_FILE

PAGERANK_FLOOR = 1.0
MAX_ENTITIES = 100
MAX_INTERACTIONS = 200

_ENTITIES = """
SELECT n.id, n.label, n.namespace, n.properties, n.pagerank,
       (SELECT COUNT(*) FROM graph_links l WHERE l.target_id = n.id AND l.relation_type = 'REFERENCES') AS mentions
FROM graph_nodes n
WHERE n.type = 'entity' AND n.pagerank >= ? AND n.namespace NOT LIKE '%-ephemeral'
ORDER BY n.pagerank DESC, mentions DESC, n.id LIMIT ?"""


def _marks(n: int) -> str:
    return ",".join("?" * n)


class WorldReader(SqliteReader):
    reads = ("graph",)

    def __init__(self, directory: Any) -> None:
        super().__init__(directory, DB_FILE)

    def entities(self, limit: int = MAX_ENTITIES) -> list[dict[str, Any]]:
        def run(conn: sqlite3.Connection) -> list[dict[str, Any]]:
            out = []
            for nid, label, ns, props, rank, mentions in conn.execute(_ENTITIES, (PAGERANK_FLOOR, limit)):
                kind = (orjson.loads(props or "{}") or {}).get("kind", "")
                out.append({"id": nid, "name": label, "kind": kind, "namespace": ns,
                            "pagerank": round(float(rank), 6), "mentions": int(mentions)})
            return out
        return self.read(run, [])

    def interactions(self, entity_ids: list[str], limit: int = MAX_INTERACTIONS) -> list[dict[str, Any]]:
        if len(entity_ids) < 2:
            return []
        marks = _marks(len(entity_ids))

        def run(conn: sqlite3.Connection) -> list[dict[str, Any]]:
            co = conn.execute(
                f"SELECT a.target_id, b.target_id, COUNT(*), MIN(a.source_id) FROM graph_links a "
                f"JOIN graph_links b ON b.source_id = a.source_id AND b.relation_type = 'REFERENCES' "
                f"AND b.target_id > a.target_id WHERE a.relation_type = 'REFERENCES' AND a.target_id IN ({marks}) "
                f"AND b.target_id IN ({marks}) GROUP BY a.target_id, b.target_id",
                (*entity_ids, *entity_ids)).fetchall()
            deps = conn.execute(
                f"SELECT ra.target_id, rb.target_id, COUNT(*), MIN(d.source_id) FROM graph_links ra "
                f"JOIN graph_links d ON d.source_id = ra.source_id AND d.relation_type = 'DEPENDS_ON' "
                f"JOIN graph_links rb ON rb.source_id = d.target_id AND rb.relation_type = 'REFERENCES' "
                f"WHERE ra.relation_type = 'REFERENCES' AND ra.target_id IN ({marks}) AND rb.target_id IN ({marks}) "
                f"AND rb.target_id != ra.target_id GROUP BY ra.target_id, rb.target_id",
                (*entity_ids, *entity_ids)).fetchall()
            out = [{"source": s, "target": t, "relation": "RELATES_TO", "weight": int(n), "memory_id": m}
                   for s, t, n, m in co]
            out += [{"source": s, "target": t, "relation": "DEPENDS_ON", "weight": int(n), "memory_id": m}
                    for s, t, n, m in deps]
            out.sort(key=lambda x: (-x["weight"], x["relation"], x["source"], x["target"]))
            return out[:limit]
        return self.read(run, [])
