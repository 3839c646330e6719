"""Graph retrieval (spec 001): hybrid search over document chunks, expanded through the graph
to each chunk's article, the article's authors, the entities the chunk mentions and the chunks
around it.

Search is the core's (`SearchService.chunks`: vector KNN and full text fused by reciprocal
rank); expansion is one read for all hits. Each request logs a trace (what was searched, how
many chunks were found and expanded, the time of each step) under its request id.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from polyg.core import limits
from polyg.core.graph.context import GraphContext
from polyg.core.search.service import CHUNK_TARGETS, SearchService
from polyg.errors import EmptyQuery, IndexNotFound, InvalidParams, RetrievalError, StoreError, StoreTimeout
from polyg.store.falkor import Row
from polyg.store.queries import articles as q
from polyg.store.queries import indexes as indexes_q

log = logging.getLogger(__name__)

DEFAULT_LIMIT = 5
MAX_LIMIT = 100


@dataclass(frozen=True)
class Retrieved:
    """A chunk search found, with what the graph holds around it."""

    chunk_id: str
    text: str
    score: float
    vector_score: float | None
    text_score: float | None
    article_id: str
    title: str
    url: str | None
    date: str | None
    authors: tuple[str, ...]
    entities: tuple[str, ...]
    heading: str | None
    position: int
    before: str | None
    after: str | None


class RetrievalService:
    def __init__(self, ctx: GraphContext, search: SearchService) -> None:
        self.ctx = ctx
        self.search = search
        self._vector_index_seen: set[str] = set()

    def forget_database_state(self) -> None:
        """The database restarted or was replaced: check its indexes again."""
        self._vector_index_seen.clear()

    async def retrieve(self, project: str, query: str, limit: int = DEFAULT_LIMIT) -> list[Retrieved]:
        if not isinstance(query, str) or not query.strip():
            raise EmptyQuery("Query must not be empty: ask a question, e.g. 'Who wrote about GPT-4?'.")
        limits.text(query, "query", max_len=limits.MAX_TEXT)
        if not 1 <= limit <= MAX_LIMIT:
            raise InvalidParams(f"limit must be between 1 and {MAX_LIMIT}.")
        started = time.perf_counter()
        await self._check_vector_index(project)
        hits = await self.search.search(project, query, "chunks", limit)
        searched = time.perf_counter()
        found = await self._expand(project, [hit.node_id for hit in hits]) if hits else {}
        expanded = time.perf_counter()
        results = []
        for hit in hits:
            row = found.get(hit.node_id)
            if row is None:
                continue  # deleted since search found it
            (chunk_id, text, position, heading, article_id, title, url, date, authors, entities, before, after) = row
            results.append(
                Retrieved(
                    chunk_id,
                    text,
                    hit.fused,
                    hit.vector,
                    hit.text,
                    article_id,
                    title,
                    url,
                    date,
                    tuple(sorted(authors)),
                    tuple(sorted(entities)),
                    heading,
                    int(position),
                    before,
                    after,
                )
            )
        log.info(
            "graph_retrieve trace",
            extra={
                "project": project,
                "searched": [str(t.label) for t in CHUNK_TARGETS],
                "search": "vector+fulltext",
                "query_chars": len(query),
                "limit": limit,
                "chunks_found": len(hits),
                "chunks_expanded": len(found),
                "results": len(results),
                "search_ms": round((searched - started) * 1000, 3),
                "expansion_ms": round((expanded - searched) * 1000, 3),
            },
        )
        return results

    async def _expand(self, project: str, chunk_ids: list[str]) -> dict[str, Row]:
        try:
            rows = await q.expand_chunks(self.ctx, project, chunk_ids)
        except StoreTimeout:
            raise
        except StoreError as exc:
            raise RetrievalError(f"Graph expansion failed for {len(chunk_ids)} chunks: {exc.message}") from exc
        found = {row[0]: row for row in rows}
        if not found:
            # Search found chunks that no article holds: the documents were half-removed.
            raise RetrievalError(
                f"Graph expansion failed: the {len(chunk_ids)} chunks found belong to no article in project "
                f"{project!r}. Ingest the documents again (polyg ingest) to rebuild them."
            )
        return found

    async def _check_vector_index(self, project: str) -> None:
        """A project holding chunks must have their vector index: without it search would
        silently find nothing by meaning."""
        if project in self._vector_index_seen:
            return
        if await indexes_q.has_chunk_vector_index(self.ctx, project):
            self._vector_index_seen.add(project)
            return
        if await q.chunk_count(self.ctx, project) > 0:
            raise IndexNotFound(
                f"The vector index of the chunks of project {project!r} is missing: run "
                f"`polyg init-schema --project {project}` to create it, then ask again."
            )
