"""The semantic view: concepts and semantic search.

A concept is an entity of type `concept` (so kg, memory-compat and hybrid search see it too).
When one is added, the concepts at cosine similarity `SIMILAR_MIN` or more get a
`SIMILAR_TO {score}` link to it, kept as data that reads can follow; `REPRESENTS` links a
concept to the entities it is about.

`search` is polyg's hybrid entity search (vector + full text, fused by rank) together with a
vector search over events, fused by reciprocal rank again; a hit whose cosine similarity to
the query is below `threshold` is dropped unless its name is the query itself.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from polyg.core import degraded, limits
from polyg.core.graph.context import GraphContext
from polyg.core.graph.edge_writer import EdgeWriter
from polyg.core.graph.entities import EntityService
from polyg.core.graph.vectors import head_text
from polyg.core.search.resolve import Resolver, index_rows
from polyg.core.search.service import SearchService, rrf
from polyg.errors import EmbeddingError, InvalidParams, NotFound
from polyg.names import new_id, now_iso
from polyg.store.falkor import Row, VectorParam
from polyg.store.names import REPRESENTS, SIMILAR_TO
from polyg.store.queries import edge_reads as edge_reads_q
from polyg.store.queries import resolve as resolve_q
from polyg.store.queries import search as q

CONCEPT = "concept"
SIMILAR_MIN = 0.6
SIMILAR_K = 20
DEFAULT_THRESHOLD = 0.3  # all-MiniLM-L6-v2 puts unrelated short texts at 0.0-0.3
RRF_K = 10


@dataclass(frozen=True)
class Concept:
    id: str
    name: str
    description: str
    created: bool
    similar: list[tuple[str, float]] = field(default_factory=list)
    represents: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class SemanticHit:
    id: str
    kind: str  # "entity" | "concept" | "event"
    text: str  # an entity's name, an event's description
    score: float
    similarity: float | None
    type: str | None = None
    description: str | None = None
    occurred_at: str | None = None
    similar: list[tuple[str, float]] = field(default_factory=list)


class SemanticGraph:
    def __init__(
        self,
        ctx: GraphContext,
        resolver: Resolver,
        entities: EntityService,
        search: SearchService,
        edges: EdgeWriter | None = None,
    ) -> None:
        self.ctx = ctx
        self.edges = edges or EdgeWriter(ctx)  # polyg's own types: nothing to register
        self.resolver = resolver
        self.entities = entities
        self.search_service = search

    async def add_concept(
        self, project: str, *, name: str, description: str = "", represents: list[str] | None = None
    ) -> Concept:
        name = limits.name(name)
        limits.text(description, "description", max_len=limits.MAX_TEXT, allow_empty=True)
        names = [limits.name(n, f"represents[{i}]") for i, n in enumerate(represents or [])]
        targets = await self.resolver.entity_ids(project, names)
        unknown = [n for n in names if n not in targets]
        if unknown:
            raise NotFound(f"Entity with name {', '.join(unknown)} not found.")
        existing = await resolve_q.entity_named(self.ctx, project, name)
        if existing and existing[0][2] != CONCEPT:
            # A second entity of the name would make every lookup by name ambiguous; turning
            # the entity into a concept would lose its type.
            raise _name_taken(name, existing[0][2])
        # Everything is checked: now the writes.
        created = False
        if not existing:
            # Made unless an entity of that name exists by now, checked inside the write (the
            # one writer of entities): two calls at once make one concept.
            row = {"id": new_id("ent"), "name": name, "type": CONCEPT, "summary": description}
            made = await self.entities.writer.create(project, [row], if_absent="name")
            if made:
                concept_id, created = made[0].id, True
            else:
                existing = await resolve_q.entity_named(self.ctx, project, name)
                if not existing:
                    raise NotFound(f"Concept {name!r} was deleted meanwhile.")
                if existing[0][2] != CONCEPT:
                    raise _name_taken(name, existing[0][2])
        if existing:
            concept_id, summary, _ = existing[0]
            if description and description != summary:
                await self.entities.update_description(project, concept_id, description)
            else:
                description = summary or ""
        now = now_iso()
        if targets:
            # Once per concept and entity: a link there already is left as it is.
            rows: list[dict[str, str]] = [
                {"id": new_id("rel"), "a": concept_id, "b": i, "type": REPRESENTS}
                for i in sorted(set(targets.values()))
            ]
            await self.edges.create(project, rows, if_absent="pair", shape="plain", now=now)
        # The concept's vector is its head's (it has no observations): the same text, the same model.
        vector, _ = await asyncio.gather(
            self.ctx.embed([head_text(name, CONCEPT, description)]), self.ctx.vectors.settle(project, 5.0)
        )
        similar = await self._similar(project, VectorParam(vector[0]), concept_id)
        if similar:
            # One link per pair whichever way it points: a link there already is replaced.
            links = [
                {"id": new_id("rel"), "a": concept_id, "b": i, "type": SIMILAR_TO, "props": {"score": round(s, 4)}}
                for i, _, s in similar
            ]
            await self.edges.create(project, links, if_absent="replace", shape="plain", now=now)
        return Concept(
            concept_id,
            name,
            description,
            created,
            [(n, round(s, 4)) for _, n, s in similar],
            sorted(targets),
        )

    async def _similar(self, project: str, vector: VectorParam, concept_id: str) -> list[tuple[str, str, float]]:
        rows = await index_rows(q.similar_concepts(self.ctx, project, vector, concept_id, SIMILAR_K, SIMILAR_MIN))
        return [(i, n, float(s)) for i, n, s in rows]

    async def search(
        self, project: str, query: str, *, limit: int = 10, threshold: float = DEFAULT_THRESHOLD, events: bool = True
    ) -> list[SemanticHit]:
        limits.limit(limit)
        if not -1.0 <= threshold <= 1.0:
            raise InvalidParams("threshold must be between -1 and 1 (a cosine similarity).")
        wanted = max(limit * 2, 20)
        # The query is embedded once: entity search, event search and the similarities share it.
        embedding = asyncio.ensure_future(self.ctx.embed_query(query))
        try:
            ranked, event_rows = await asyncio.gather(
                self.search_service.search(
                    project, query, "semantic", min(wanted, limits.MAX_LIMIT), query_vector=embedding
                ),
                self._events(project, embedding, wanted) if events else _empty(),
            )
        finally:
            embedding.cancel()  # a search refused before it embedded: nobody waits for the vector
        # None when the embedder failed: the search degraded to words (polyg.core.degraded),
        # and its hits are kept without a similarity to hold them to the threshold.
        vector = _vector_of(embedding)
        entity_rows = await q.entity_hits(
            self.ctx, project, [h.node_id for h in ranked], VectorParam(vector) if vector else None
        )
        details = {row[0]: row for row in entity_rows}
        hits: dict[str, SemanticHit] = {}
        entity_rank: list[tuple[str, float]] = []
        for entity_id in (h.node_id for h in ranked):
            row = details.get(entity_id)
            if row is None:
                continue
            _, name, type_, summary, sim = row
            exact = name.strip().lower() == query.strip().lower()
            if not exact and vector is not None and (sim is None or sim < threshold):
                continue
            kind = "concept" if type_ == CONCEPT else "entity"
            hits[entity_id] = SemanticHit(entity_id, kind, name, 0.0, _round(sim), type_, summary or "")
            entity_rank.append((entity_id, 1.0))
        event_rank: list[tuple[str, float]] = []
        for event_id, description, at, sim in event_rows:
            if sim is not None and float(sim) >= threshold:
                hits[event_id] = SemanticHit(event_id, "event", description, 0.0, _round(sim), occurred_at=at)
                event_rank.append((event_id, 1.0))
        scores = rrf([entity_rank, event_rank], RRF_K)
        order = sorted(scores, key=lambda i: (-scores[i], -(hits[i].similarity or 0.0), i))[:limit]
        concept_ids = [i for i in order if hits[i].kind == "concept"]
        similar = {}
        if concept_ids:
            for cid, pairs, _ in await edge_reads_q.concept_neighbours(self.ctx, project, concept_ids, 5):
                similar[cid] = [(n, round(float(s), 4)) for n, s in pairs if n is not None]
        return [
            SemanticHit(
                h.id,
                h.kind,
                h.text,
                round(scores[h.id], 6),
                h.similarity,
                h.type,
                h.description,
                h.occurred_at,
                similar.get(h.id, []),
            )
            for h in (hits[i] for i in order)
        ]

    async def _events(self, project: str, embedding: asyncio.Future[list[float]], k: int) -> list[Row]:
        # Events get their vectors from the vectorizer: wait for those of earlier writes, as the
        # entity search does, so that an event just written is found by meaning.
        try:
            vector, _ = await asyncio.gather(
                embedding, self.ctx.vectors.settle(project, self.search_service.config.vector_wait_s)
            )
        except EmbeddingError as exc:
            if not degraded.note(degraded.embedder_failed(exc.message)):
                raise
            return []
        return await index_rows(q.event_hits(self.ctx, project, VectorParam(vector), k))


async def _empty() -> list[Row]:
    return []


def _vector_of(embedding: asyncio.Future[list[float]]) -> list[float] | None:
    if embedding.done() and not embedding.cancelled() and embedding.exception() is None:
        return embedding.result()
    return None


def _round(value: float | None) -> float | None:
    return None if value is None else round(float(value), 4)


def _name_taken(name: str, entity_type: str) -> InvalidParams:
    return InvalidParams(
        f"An entity named {name!r} exists already, of type {entity_type!r}: a concept needs a name "
        "of its own (e.g. the topic it stands for); link the concept to that entity with represents."
    )
