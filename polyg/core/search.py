"""Hybrid entity search: vector KNN and full text over entities and their observations,
fused by reciprocal rank; an exact name match always ranks first.

Each signal is a ranked list of entity ids. An observation hit counts for the entity that
holds it, so "davis trumpet" finds Miles Davis through the observation that mentions his
trumpet. Reciprocal rank fusion needs no score calibration between the signals, which is
why it is used rather than a weighted sum of cosine and TF-IDF scores.
"""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass

from polyg.core import limits
from polyg.core.graph import GraphContext
from polyg.errors import EmptyQuery, StoreError

WORD = re.compile(r"\w+", re.UNICODE)


@dataclass(frozen=True)
class SearchConfig:
    """Knobs of hybrid search; `DEFAULT` is what the tools use."""

    rrf_k: int = 60
    candidates: int = 50  # per signal, before fusion
    fuzzy_min_len: int = 5  # terms this long also match with one typo
    vector_weight: float = 1.0
    text_weight: float = 1.0


DEFAULT = SearchConfig()


def fulltext_query(query: str, config: SearchConfig = DEFAULT) -> str | None:
    """Any-term full-text query with a one-typo variant of longer terms (RediSearch syntax).

    Only word characters survive, so no user text reaches the query syntax unescaped.
    """
    terms = list(dict.fromkeys(t.lower() for t in WORD.findall(query)))
    if not terms:
        return None
    parts = list(terms)
    parts += [f"%{t}%" for t in terms if len(t) >= config.fuzzy_min_len and not t.isdigit()]
    return "|".join(parts)


def rrf(rankings: list[tuple[list[str], float]], k: int) -> dict[str, float]:
    scores: dict[str, float] = {}
    for ids, weight in rankings:
        for rank, entity_id in enumerate(ids):
            scores[entity_id] = scores.get(entity_id, 0.0) + weight / (k + rank + 1)
    return scores


class SearchService:
    def __init__(self, ctx: GraphContext, config: SearchConfig = DEFAULT) -> None:
        self.ctx = ctx
        self.config = config

    async def entities(self, project: str, query: str, limit: int = 10) -> list[tuple[str, float]]:
        """Best entity ids for `query`, with fused scores, best first."""
        if not isinstance(query, str) or not query.strip():
            raise EmptyQuery("Query must not be empty.")
        limits.text(query, "query", max_len=limits.MAX_TEXT)
        limits.limit(limit)
        cfg = self.config
        k = max(cfg.candidates, limit)
        [vector] = await self.ctx.embed([query])
        text_q = fulltext_query(query, cfg)
        signals = [self._knn(project, "Entity", vector, k), self._knn(project, "Observation", vector, k)]
        weights = [cfg.vector_weight, cfg.vector_weight]
        if text_q:
            signals += [
                self._fulltext(project, "Entity", text_q, k),
                self._fulltext(project, "Observation", text_q, k),
            ]
            weights += [cfg.text_weight, cfg.text_weight]
        exact_q = self.ctx.read(project, "MATCH (e:Entity {name: $name}) RETURN e.id", {"name": query.strip()})
        ranked = await asyncio.gather(*signals)
        exact = await exact_q
        scores = rrf(list(zip(ranked, weights, strict=True)), cfg.rrf_k)
        top = max(scores.values(), default=0.0) + 1.0
        for (entity_id,) in exact:
            scores[entity_id] = top
        return sorted(scores.items(), key=lambda item: (-item[1], item[0]))[:limit]

    @staticmethod
    def _owner(label: str) -> tuple[str, str]:
        """Match clause and id expression that map a hit on `label` to its entity."""
        if label == "Entity":
            return "", "node.id"
        return "MATCH (e:Entity)-[:HAS_OBSERVATION]->(node) ", "e.id"

    async def _knn(self, project: str, label: str, vector: list[float], k: int) -> list[str]:
        owner, returns = self._owner(label)
        return await self._ranked(
            project,
            f"CALL db.idx.vector.queryNodes('{label}', 'embedding', $k, vecf32($v)) YIELD node, score "
            f"{owner}RETURN {returns}, score ORDER BY score ASC",
            {"k": k, "v": vector},
        )

    async def _fulltext(self, project: str, label: str, text_q: str, k: int) -> list[str]:
        owner, returns = self._owner(label)
        return await self._ranked(
            project,
            f"CALL db.idx.fulltext.queryNodes('{label}', $q) YIELD node, score "
            f"{owner}RETURN {returns}, score ORDER BY score DESC LIMIT $k",
            {"q": text_q, "k": k},
        )

    async def _ranked(self, project: str, cypher: str, params: dict[str, object]) -> list[str]:
        try:
            rows = await self.ctx.read(project, cypher, params)
        except StoreError as exc:
            # A project with no writes yet has no indexes: it simply has nothing to find.
            if "index" in str(exc).lower() or "empty key" in str(exc).lower():
                return []
            raise
        return list(dict.fromkeys(row[0] for row in rows))
