"""Relationship extraction from observations (spec 004 `extract_entity_relationships`,
`extract_all_relationships`).

Statements come from the rules of `polyg.core.text.relation_patterns`, or from the LLM when one is
configured (any LLM failure falls back to the rules). Either way each statement is checked the
same way: one of the seven relations, not negated, and both ends resolved to existing entities
by name (exact, then in any case, then fuzzy: full-text candidates whose normalised name is at
least `FUZZY_MIN` similar). A name that resolves to nothing is reported, never created.

An extracted relationship weighs 0.5 (spec 004) and records where it came from (`origin:
extraction`, `extracted_by`, `observation_id`, `evidence`: the sentence). One relationship per
(source, type, target): running again, or stating a relationship that exists (added by hand,
weight 0.9), adds nothing and changes nothing.

The extraction log (`polyg.store.queries.extraction`) records the entity revision each entity was
extracted at; `extract_all` takes only entities changed since, in batches, logging progress and reporting
it to a caller that asked (`polyg.core.progress`).
"""

from __future__ import annotations

import difflib
import logging
import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from pydantic import BaseModel, Field

from polyg.core import limits
from polyg.core.graph.context import GraphContext
from polyg.core.graph.edge_writer import EdgeWriter
from polyg.core.graph.edges import new_edge_id
from polyg.core.graph.reltypes import RelTypeService
from polyg.core.graph.weighted_links import CAUSAL, link_row, stored_type
from polyg.core.progress import Progress
from polyg.core.search.resolve import Resolver
from polyg.core.text.relation_patterns import RELATIONS, SELF, Statement, statements
from polyg.errors import InvalidParams, NotFound, StoreError
from polyg.llm import LLM, Message, with_fallback
from polyg.names import now_iso
from polyg.store.falkor import Row
from polyg.store.names import ENTITY
from polyg.store.queries import extraction as q
from polyg.store.queries import observations as observations_q
from polyg.store.queries import resolve as resolve_q

log = logging.getLogger(__name__)

EXTRACTED_WEIGHT = 0.5
FUZZY_MIN = 0.85
FUZZY_CANDIDATES = 20
BATCH = 100
MAX_EVIDENCE = 1_000
MAX_LLM_RELATIONS = 200
WORD = re.compile(r"\w+", re.UNICODE)

How = Literal["owner", "exact", "case-insensitive", "fuzzy"]
Source = Literal["rules", "llm"]
# (observation id, statement)
Stated = list[tuple[str, Statement]]


@dataclass(frozen=True)
class Resolved:
    id: str
    name: str
    how: How
    score: float = 1.0


@dataclass(frozen=True)
class Extracted:
    relation: str  # spec 004's name
    source: Resolved
    target: Resolved
    relationship_id: str
    created: bool  # False: the relationship was there already
    observation_id: str
    evidence: str


@dataclass(frozen=True)
class Unresolved:
    text: str
    relation: str
    role: Literal["subject", "object"]
    observation_id: str


@dataclass(frozen=True)
class EntityExtraction:
    entity_id: str
    name: str
    relationships: tuple[Extracted, ...]
    unresolved: tuple[Unresolved, ...]
    negated: int  # statements denied in the text ("does not use"), which add nothing
    source: Source

    @property
    def created(self) -> int:
        return sum(1 for r in self.relationships if r.created)


@dataclass(frozen=True)
class ExtractionRun:
    entities: tuple[EntityExtraction, ...]
    remaining: int  # entities still due after this run


def normalise(text: str) -> str:
    return " ".join(WORD.findall(text.lower().replace("_", " ")))


def similarity(a: str, b: str) -> float:
    return difflib.SequenceMatcher(None, normalise(a), normalise(b)).ratio()


def fulltext_query(name: str) -> str:
    """Any word of the name, or a word it starts ("Postgres" finds "PostgreSQL")."""
    words = list(dict.fromkeys(w for w in WORD.findall(name.lower()) if len(w) > 1))[:16]
    return "|".join(f"{w}*" if len(w) >= 3 else w for w in words)


class NameResolver:
    """Entity names to entities: exact, then in any case (the one name resolver's steps), then
    fuzzy (see the module)."""

    def __init__(self, ctx: GraphContext) -> None:
        self.ctx = ctx
        self.names = Resolver(ctx)

    async def resolve(self, project: str, names: Sequence[str]) -> dict[str, Resolved]:
        wanted = list(dict.fromkeys(n for n in names if n))
        found: dict[str, Resolved] = {}
        if not wanted:
            return found
        # Looked up as names are stored (stripped, NFC), keyed by the name as written: exact,
        # then in any case, as every tool resolves a name (`polyg.core.search.resolve.Resolver`).
        stored = {name: limits.as_stored(name) for name in wanted}
        matches = await self.names.entities_named(project, list(set(stored.values())))
        for name in wanted:
            match = matches.get(stored[name])
            if match is not None:
                found[name] = Resolved(match.id, match.name, match.how)
        for name in [n for n in wanted if n not in found]:
            fuzzy = await self._fuzzy(project, name)
            if fuzzy is not None:
                found[name] = fuzzy
        return found

    async def _fuzzy(self, project: str, name: str) -> Resolved | None:
        query = fulltext_query(name)
        if not query:
            return None
        best: Resolved | None = None
        for entity_id, candidate in await self._candidates(project, query):
            score = similarity(name, candidate or "")
            if score >= FUZZY_MIN and (best is None or score > best.score):
                best = Resolved(entity_id, candidate, "fuzzy", round(score, 4))
        return best

    async def _candidates(self, project: str, query: str) -> list[Row]:
        try:
            return await resolve_q.text_candidates(self.ctx, project, ENTITY, query, FUZZY_CANDIDATES)
        except StoreError:
            return []  # no full-text index yet: nothing to be similar to


# --- the LLM's answer, checked like the rules' ----------------------------------------------


class LLMRelation(BaseModel):
    subject: str | None = Field(
        default=None, description="Who or what the relation starts from; null for the entity itself."
    )
    relation: Literal["relates_to", "causes", "part_of", "implements", "extends", "uses", "depends_on"]
    object: str = Field(min_length=1, max_length=512)
    observation: int = Field(ge=0, description="Index of the observation that states it.")
    negated: bool = False


class LLMRelations(BaseModel):
    relationships: list[LLMRelation] = Field(max_length=MAX_LLM_RELATIONS)


def rule_statements(name: str, observations: Sequence[tuple[str, str]]) -> Stated:
    return [(obs_id, s) for obs_id, text in observations for s in statements(text)]


class LLMStatements:
    """Statements as the LLM reads them, in the rules' form (checked the same way after)."""

    def __init__(self, llm: LLM) -> None:
        self.llm = llm

    async def extract(self, name: str, observations: Sequence[tuple[str, str]]) -> Stated:
        numbered = "\n".join(f"{i}. {text}" for i, (_, text) in enumerate(observations))
        messages: list[Message] = [
            {
                "role": "system",
                "content": "Extract relationships between named things stated in the observations of one "
                f"entity. Relations: {', '.join(RELATIONS)}. Use the subject null when the entity itself "
                "is the subject; mark denied statements negated. State only what the text says.",
            },
            {"role": "user", "content": f"Entity: {name}\nObservations:\n{numbered}"},
        ]
        answer = await self.llm.complete_json(messages, LLMRelations)
        stated: Stated = []
        for item in answer.relationships:
            if item.observation >= len(observations):
                continue  # names no observation: not evidence of anything
            obs_id, text = observations[item.observation]
            stated.append(
                (obs_id, Statement(item.relation, "active", item.subject, (item.object,), item.negated, text))
            )
        return stated


class Extractor:
    def __init__(self, ctx: GraphContext, reltypes: RelTypeService, llm: LLM | None = None) -> None:
        self.ctx = ctx
        self.reltypes = reltypes
        self.writer = EdgeWriter(ctx, reltypes)
        self.resolver = NameResolver(ctx)
        self.statements = with_fallback(
            LLMStatements(llm).extract if llm is not None else None, rule_statements, name="relationship extraction"
        )

    async def entity(self, project: str, entity_id: str) -> EntityExtraction:
        """Extracts from one entity's observations, whether or not it changed since."""
        rows = await observations_q.observations_of(self.ctx, project, [entity_id])
        if not rows:
            raise NotFound(f"Entity {entity_id} not found.")
        return (await self._batch(project, rows))[0]

    async def due(self, project: str, limit: int | None = None, progress: Progress | None = None) -> ExtractionRun:
        """Extracts from the entities whose text changed since their last extraction (at most
        `limit`), `BATCH` at a time, telling `progress` after each batch."""
        if limit is not None and limit < 1:
            raise InvalidParams("limit must be at least 1.")
        ids = [row[0] for row in await q.entities_due(self.ctx, project, limit)]
        done: list[EntityExtraction] = []
        for start in range(0, len(ids), BATCH):
            rows = await observations_q.observations_of(self.ctx, project, ids[start : start + BATCH])
            done.extend(await self._batch(project, rows))
            log.info(
                "relationship extraction progress",
                extra={"project": project, "processed": len(done), "total": len(ids)},
            )
            if progress is not None:
                await progress(len(done), len(ids), f"{len(done)} of {len(ids)} entities read")
        return ExtractionRun(tuple(done), await q.count_due(self.ctx, project))

    async def _batch(self, project: str, rows: Sequence[Row]) -> list[EntityExtraction]:
        per_entity: list[tuple[str, str, str | None, Stated, Source]] = []
        for entity_id, name, rev, observations in rows:
            pairs = [(o[0], o[1]) for o in observations or [] if o and o[1]]
            if not pairs:  # nothing to read: no LLM call
                per_entity.append((entity_id, name or "", rev, [], "rules"))
                continue
            answer = await self.statements.run(name or "", pairs)
            per_entity.append((entity_id, name or "", rev, answer.value, answer.source))
        names = [
            n
            for _, _, _, stated, _ in per_entity
            for _, s in stated
            if not s.negated
            for n in (s.subject, *s.objects)
            if n and n.lower() not in SELF
        ]
        resolved = await self.resolver.resolve(project, names)
        plans = [self._plan(e, name, stated, resolved, source) for e, name, _, stated, source in per_entity]
        written = await self._write(project, [link for links, _, _ in plans for link in links])
        results = []
        for (entity_id, name, _, _, source), (links, unresolved, negated) in zip(per_entity, plans, strict=True):
            found = tuple(written[key] for key in dict.fromkeys(links) if key in written)
            results.append(EntityExtraction(entity_id, name, found, tuple(unresolved), negated, source))
        await q.mark_extracted(self.ctx, project, [(e, rev) for e, _, rev, _, _ in per_entity], now_iso())
        return results

    def _plan(
        self, entity_id: str, name: str, stated: Stated, resolved: dict[str, Resolved], source: Source
    ) -> tuple[list[Planned], list[Unresolved], int]:
        owner = Resolved(entity_id, name, "owner")
        links: list[Planned] = []
        unresolved: list[Unresolved] = []
        negated = 0
        for obs_id, s in stated:
            if s.negated:
                negated += 1
                continue
            subject = owner if s.subject is None or normalise(s.subject) == normalise(name) else resolved.get(s.subject)
            if subject is None:
                unresolved.append(Unresolved(s.subject or "", s.relation, "subject", obs_id))
                continue
            for text in s.objects:
                itself = text.lower() in SELF or normalise(text) == normalise(name)
                other = owner if itself else resolved.get(text)
                if other is None:
                    unresolved.append(Unresolved(text, s.relation, "object", obs_id))
                    continue
                start, end = (subject, other) if s.voice == "active" else (other, subject)
                if start.id != end.id:
                    links.append(Planned(s.relation, start, end, obs_id, s.sentence[:MAX_EVIDENCE], source))
        return links, unresolved, negated

    async def _write(self, project: str, links: Sequence[Planned]) -> dict[Planned, Extracted]:
        by_type: dict[str, list[Planned]] = defaultdict(list)
        for link in dict.fromkeys(links):
            by_type[link.relation].append(link)
        written: dict[Planned, Extracted] = {}
        for relation, items in by_type.items():
            rel = stored_type(relation)
            rows = [{**link_row(p.source.id, p.target.id, rel, _props(p)), "i": i} for i, p in enumerate(items)]
            # A link there already is left as it is (no `on_match`).
            made = await self.writer.create(
                project, rows, if_absent="pair", shape="plain", returns="row.i, r.id, r.id = row.id"
            )
            for i, rel_id, created in made:
                p = items[int(i)]
                written[p] = Extracted(
                    relation, p.source, p.target, rel_id, bool(created), p.observation_id, p.evidence
                )
        return written


@dataclass(frozen=True)
class Planned:
    relation: str
    source: Resolved
    target: Resolved
    observation_id: str
    evidence: str
    extracted_by: Source

    def __hash__(self) -> int:
        return hash((self.relation, self.source.id, self.target.id))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Planned) and (self.relation, self.source.id, self.target.id) == (
            other.relation,
            other.source.id,
            other.target.id,
        )


def _props(p: Planned) -> dict[str, object]:
    rel = stored_type(p.relation)
    props: dict[str, object] = {
        "id": new_edge_id(rel),
        "weight": EXTRACTED_WEIGHT,
        "is_causal": p.relation == "causes",
        "created_at": now_iso(),
        "origin": "extraction",
        "extracted_by": p.extracted_by,
        "observation_id": p.observation_id,
        "evidence": p.evidence,
    }
    if rel == CAUSAL:
        props["confidence"] = EXTRACTED_WEIGHT
    return props
