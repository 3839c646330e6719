"""What a name or a piece of text refers to: the cross-graph linker.

Entities are referred to by name: the exact name first, then the same name in any case
("alice" finds "Alice"). Causal and temporal references are free text ("auth service crash")
and may mean an event (by its description) or an entity (by its name). They are resolved in
this order, the first that answers wins:

1. an id (`ent_...`, `evt_...`) of an existing node;
2. the exact text, then the same text in any case (entity names before event descriptions);
3. fuzzy: full-text candidates whose normalised text is at least `FUZZY_MIN` similar
   (difflib ratio; "auth service crash" and "Auth service crashed" score 0.95);
4. vector: the nearest event or entity at cosine similarity `VECTOR_MIN` or more.

Readers (`get_causal_chain`, `explain_why`) and `add_causal_link` then try a fifth step,
`described`: a natural phrasing of a stored event ("the walk-in freezer failed" for "Yesterday
at 21:15 the walk-in freezer failed because the compressor overheated."), found by hybrid search
(`polyg.core.search`, words and meaning) and kept when the stored text holds every content
word of the phrasing (meaning alone is the vector step's, at its high bar: "missing
AUTH_SECRET" is near the entity AUTH_SECRET, yet not it); its cosine similarity is the score.

Fuzzy and vector matches must also name the same numbers: "step 3 of the outage" is not
"step 2 of the outage", nor deploy v2.3.2 deploy v2.3.1, however alike the rest.

`VECTOR_MIN` is high on purpose: all-MiniLM-L6-v2 puts paraphrases at 0.8-0.95 and texts that
merely share a topic at 0.5-0.75 ("missing AUTH_SECRET" against the entity AUTH_SECRET is a
condition, not the variable, and must not merge into it).
"""

from __future__ import annotations

import asyncio
import contextlib
import difflib
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Literal

from polyg.core.graph.context import GraphContext
from polyg.core.search.service import STOPWORDS, PresetName, SearchService, stem
from polyg.errors import StoreError
from polyg.store.falkor import Row, VectorParam
from polyg.store.names import ENTITY, EVENT, Label
from polyg.store.queries import node_reads as node_reads_q
from polyg.store.queries import resolve as q

Kind = Literal["entity", "event"]
How = Literal["id", "exact", "case-insensitive", "fuzzy", "vector", "search", "created"]

FUZZY_MIN = 0.85
VECTOR_MIN = 0.85
CANDIDATES = 10
# The search each kind is found by (`polyg.core.search.service.PRESETS`).
SEARCH_PRESETS: dict[Kind, PresetName] = {"event": "events", "entity": "default"}
WORD = re.compile(r"\w+", re.UNICODE)
LABELS: dict[Kind, Label] = {"entity": ENTITY, "event": EVENT}


@dataclass(frozen=True)
class NodeRef:
    """A resolved reference: which node, of which kind, and how it was found."""

    id: str
    kind: Kind
    how: How
    score: float = 1.0


@dataclass(frozen=True)
class NameMatch:
    """The entity a name resolved to: its id, its name as stored, and how it was found."""

    id: str
    name: str
    how: Literal["exact", "case-insensitive"]


def normalise(text: str) -> str:
    """Lower-case words only: "Auth-Service crashed!" -> "auth service crashed"."""
    return " ".join(WORD.findall(text.lower().replace("_", " ")))


NUMBER = re.compile(r"\d+")


def same_numbers(a: str, b: str) -> bool:
    return sorted(NUMBER.findall(a)) == sorted(NUMBER.findall(b))


def similarity(a: str, b: str) -> float:
    return difflib.SequenceMatcher(None, normalise(a), normalise(b)).ratio()


def all_words_query(text: str) -> str:
    """A full-text query matching every text that holds all the words of `text` the index
    keeps (at least three letters, no function word: the others may be left out of it, so
    asking for them could miss), or "" when no word is sure to be kept (then only a scan can
    tell). Its matches hold every text equal to `text` up to case: callers compare them."""
    words = [w for w in dict.fromkeys(WORD.findall(text.lower())) if len(w) >= 3 and w not in INDEX_STOPWORDS]
    return " ".join(words[:16])


# Words a full-text index may leave out (so a query for them finds nothing): English function
# words, as search.py drops from its queries.
INDEX_STOPWORDS = frozenset(
    "a an and are as at be but by for if in into is it no not of on or such that the their then there "
    "these they this to was will with".split()
)


def fulltext_query(text: str) -> str:
    """Any of the text's words, each stripped to letters and digits (no query operators)."""
    words = list(dict.fromkeys(w for w in WORD.findall(text.lower()) if len(w) > 1))[:16]
    return "|".join(words)


class Resolver:
    def __init__(self, ctx: GraphContext, search: SearchService | None = None) -> None:
        self.ctx = ctx
        # The hybrid search behind `described` (None: that step finds nothing).
        self.search = search

    # --- entities by name -----------------------------------------------------------------

    async def exact_names(self, project: str, names: list[str]) -> dict[str, NameMatch]:
        """name -> the oldest entity with exactly that name; unknown names absent."""
        rows = await q.entities_named(self.ctx, project, list(dict.fromkeys(names)))
        return {name: NameMatch(entity[0], entity[1], "exact") for name, entity in rows if entity is not None}

    async def entities_named(self, project: str, names: list[str]) -> dict[str, NameMatch]:
        """name -> entity, the exact name first, then the same name in any case (the oldest
        entity of either); unknown names absent."""
        wanted = list(dict.fromkeys(names))
        # On the name, then on the key the writer matches names on (`polyg.core.graph.entity_writer`),
        # then, for entities written without one (by a user's Cypher), through the full-text index.
        found: dict[str, NameMatch] = {}
        for name, entity in await q.entities_named_or_keyed(self.ctx, project, wanted):
            if entity is not None and entity[0] is not None:
                found[name] = NameMatch(entity[0], entity[1], "exact" if entity[2] else "case-insensitive")
        missing = [name for name in wanted if name not in found]
        if missing:
            folded = {name.lower(): name for name in missing}
            items = [{"q": all_words_query(f), "text": f} for f in folded]
            indexed = [it for it in items if it["q"]]
            scanned = [it["text"] for it in items if not it["q"]]
            rows = await index_rows(q.entities_named_folded_indexed(self.ctx, project, indexed)) if indexed else []
            if scanned:
                rows += await q.entities_named_folded(self.ctx, project, scanned)
            for lowered, entity in rows:
                for name in missing:
                    if name.lower() == lowered and entity is not None and entity[0] is not None:
                        found[name] = NameMatch(entity[0], entity[1], "case-insensitive")
        return found

    async def entity_ids(self, project: str, names: list[str]) -> dict[str, str]:
        """name -> entity id, exact names first, then case-insensitively; unknown names absent."""
        return {name: match.id for name, match in (await self.entities_named(project, names)).items()}

    async def entity_id(self, project: str, name: str) -> str | None:
        return (await self.entity_ids(project, [name])).get(name)

    async def entity_refs(self, project: str, refs: list[str]) -> dict[str, str]:
        """reference -> entity id, where a reference is an entity's id or else its name (as
        `entity_ids` finds it); references that are neither are absent."""
        wanted = list(dict.fromkeys(refs))
        found = {ref: ref for ref in await node_reads_q.existing_ids(self.ctx, project, wanted)}
        names = [ref for ref in wanted if ref not in found]
        if names:
            found.update(await self.entity_ids(project, names))
        return found

    # --- free text (causal and temporal references) ----------------------------------------

    async def exact(self, project: str, text: str, kind: Kind) -> str | None:
        """The id of the oldest node of `kind` whose text is exactly `text`, or None."""
        if kind == "event" and all_words_query(text):
            # Read through the full-text index (below), which finds nothing while it is rebuilt:
            # "no such event" would be a guess.
            await self.ctx.indexes.check(project)
        rows = await self._exact_rows(project, kind, text)
        return str(rows[0][0]) if rows else None

    async def _exact_rows(self, project: str, kind: Kind, text: str) -> list[Row]:
        # An entity's name has a range index; an event's description only a full-text one,
        # whose matches are compared (else every event would be read). The caller checks that
        # the indexes are built.
        words = all_words_query(text) if kind == "event" else ""
        if words:
            return await index_rows(q.node_with_text_indexed(self.ctx, project, LABELS[kind], words, text))
        return await q.node_with_text(self.ctx, project, LABELS[kind], text)

    async def node(
        self, project: str, text: str, *, kinds: tuple[Kind, ...] = ("entity", "event"), by_id: bool = True
    ) -> NodeRef | None:
        """The node `text` refers to, or None (see the module's order; without `by_id`, a
        caller that looked the id up already skips that step)."""
        # Each step's lookups (one per kind) are asked at once, and the steps two by two (id,
        # exact text and case-insensitive text; fuzzy and vector): the first match in the
        # module's order wins, as if asked one by one, in two round trips instead of four.
        by_ids = kinds if by_id else ()
        words = all_words_query(text)
        await self.ctx.indexes.check(project)  # its full-text and vector steps need the indexes
        found = await asyncio.gather(
            *(q.node_by_id(self.ctx, project, LABELS[kind], text) for kind in by_ids),
            *(self._exact_rows(project, kind, text) for kind in kinds),
            *(
                index_rows(q.node_with_text_indexed(self.ctx, project, LABELS[kind], words, text.lower(), folded=True))
                if words
                else q.node_with_folded_text(self.ctx, project, LABELS[kind], text.lower())
                for kind in kinds
            ),
        )
        for kind, rows in zip(by_ids, found, strict=False):
            if rows:
                return NodeRef(text, kind, "id")
        exact, folded = found[len(by_ids) : len(by_ids) + len(kinds)], found[len(by_ids) + len(kinds) :]
        for kind, rows in zip(kinds, exact, strict=True):
            if rows:
                return NodeRef(rows[0][0], kind, "exact")
        for kind, rows in zip(kinds, folded, strict=True):
            if rows:
                return NodeRef(rows[0][0], kind, "case-insensitive")
        nearest = asyncio.ensure_future(self._nearest(project, text, kinds))
        try:
            fuzzy = await self._fuzzy(project, text, kinds)
            if fuzzy is not None:
                return fuzzy
            return await nearest
        finally:
            # Not needed (a fuzzy match) or done with: its outcome is collected either way.
            nearest.cancel()
            with contextlib.suppress(Exception, asyncio.CancelledError):
                await nearest

    async def described(
        self, project: str, text: str, *, kinds: tuple[Kind, ...] = ("event", "entity")
    ) -> NodeRef | None:
        """The node a natural phrasing of it means, as search finds it (the module's fifth
        step), with its cosine similarity as the score; events before entities at a tie."""
        if self.search is None:
            return None
        terms = [w for w in dict.fromkeys(normalise(text).split()) if w not in STOPWORDS]
        if not terms:
            return None
        found = await asyncio.gather(
            *(self.search.search(project, text, SEARCH_PRESETS[kind], CANDIDATES) for kind in kinds)
        )
        best: tuple[tuple[float, int], NodeRef] | None = None
        for rank_of_kind, (kind, hits) in enumerate(zip(kinds, found, strict=True)):
            if not hits:
                continue
            cosine = {h.node_id: h.vector for h in hits}
            rows = await q.texts_of(self.ctx, project, LABELS[kind], [h.node_id for h in hits])
            for node_id, candidate in rows:
                stored = str(candidate or "")
                if not same_numbers(text, stored):
                    continue
                words = set(normalise(stored).split())
                if not all(
                    t in words or ((s := stem(t)) is not None and any(w.startswith(s) for w in words)) for t in terms
                ):
                    continue
                similar = float(cosine.get(node_id) or 0.0)
                key = (similar, -rank_of_kind)
                if best is None or key > best[0]:
                    best = (key, NodeRef(node_id, kind, "search", round(similar, 4)))
        return best[1] if best is not None else None

    async def _fuzzy(self, project: str, text: str, kinds: tuple[Kind, ...]) -> NodeRef | None:
        query = fulltext_query(text)
        if not query:
            return None
        best: NodeRef | None = None
        candidates = await asyncio.gather(
            *(self._candidates(q.text_candidates, project, kind, query, 20) for kind in kinds)
        )
        for kind, rows in zip(kinds, candidates, strict=True):
            for node_id, candidate in rows:
                score = similarity(text, candidate or "") if same_numbers(text, candidate or "") else 0.0
                if score >= FUZZY_MIN and (best is None or score > best.score):
                    best = NodeRef(node_id, kind, "fuzzy", round(score, 4))
        return best

    async def _nearest(self, project: str, text: str, kinds: tuple[Kind, ...]) -> NodeRef | None:
        vector, _ = await asyncio.gather(self.ctx.embed_query(text), self.ctx.vectors.settle(project, 5.0))
        param = VectorParam(vector)
        best: NodeRef | None = None
        candidates = await asyncio.gather(
            *(self._candidates(q.vector_candidates, project, kind, param, CANDIDATES) for kind in kinds)
        )
        for kind, rows in zip(kinds, candidates, strict=True):
            for node_id, candidate, score in rows:
                if (
                    score >= VECTOR_MIN
                    and same_numbers(text, str(candidate or ""))
                    and (best is None or score > best.score)
                ):
                    best = NodeRef(node_id, kind, "vector", round(float(score), 4))
        return best

    async def _candidates(
        self, query: Callable[..., Awaitable[list[Row]]], project: str, kind: Kind, *args: Any
    ) -> list[Row]:
        # The query is made here, not by the caller: a lookup cancelled before it starts (the
        # vector step, once a fuzzy match wins) then leaves no query coroutine never awaited.
        return await index_rows(query(self.ctx, project, LABELS[kind], *args))


async def index_rows(query: Awaitable[list[Row]]) -> list[Row]:
    """The rows of a query on a full-text or vector index; none where the project has no such
    index yet (nothing written to it)."""
    try:
        return await query
    except StoreError as exc:
        # FalkorDB's words for a label with no such index: "... index ...", or for a vector
        # query "Invalid arguments for procedure 'db.idx.vector.queryNodes'"; "empty key" for
        # a project nobody has written to.
        message = str(exc).lower()
        if "index" in message or "empty key" in message or "procedure 'db.idx." in message:
            return []
        raise
