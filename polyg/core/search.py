"""Hybrid entity search: vector KNN and full text over entities and their observations,
fused by reciprocal rank; an exact name match always ranks first.

Two ranked lists of entity ids are fused, one per kind of evidence. Each counts an entity
once, whether it was found through the entity's own node (name, type, description) or through
its observations, so that no kind of evidence votes twice for the same entity:

- vector: KNN over entity and observation embeddings, ranked by each entity's best cosine
  similarity, cut where the similarity falls far below the best one or below a noise floor;
- text: full-text matches of the query's words, ranked by the summed idf of the words an
  entity holds; a word that occurs nowhere in the project is replaced by its one-typo variants,
  which count less.

Reciprocal rank fusion needs no calibration between cosine and text scores, which is why it is
used rather than a weighted sum. Its blind spot is that it ignores score gaps: an entity found
by both lists wins over one that only one list found, however clear that list's verdict. The
vector cut and the typo policy keep weak evidence from becoming such a second vote ("saxophone
player" must not rank Miles Davis, who "played" the trumpet, above the tenor saxophonist).

The constants of `DEFAULT` were tuned on the LoCoMo dev split (bench/locomo_eval.py) and are
held to the fixed corpus of tests/test_search_quality.py.
"""

from __future__ import annotations

import asyncio
import heapq
import logging
import math
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass

from polyg.core import limits
from polyg.core.graph import GraphContext
from polyg.errors import EmptyQuery, IndexNotFound, StoreError
from polyg.store.falkor import Row, VectorParam

log = logging.getLogger(__name__)

LABELS = ("Entity", "Observation")
TOTALS_TTL_S = 2.0
INDEX_WAIT_S = 1.0

# Only these reach the full-text query syntax: every operator (| - % * @ ~ " ...) is dropped.
WORD = re.compile(r"\w+", re.UNICODE)

# Function words carry no topic, yet the full-text index keeps them (it has no stop list), so
# "when did she go to the park" would match nearly every text through "the" and "to", and cost
# an index scan each. Dropped from the text query unless the query is nothing but them
# (LoCoMo recall@10: 70.7 against 69.0 when kept).
STOPWORDS = frozenset(
    """a about after again all also am an and any are as at be been before being both but by can
    could did do does doing during each few for from had has have having he her here hers herself
    him himself his how i if in into is it its itself just me more most my myself no nor not now
    of off on once only or other our ours out over own same she should so some such than that the
    their theirs them themselves then there these they this those through to too under until up
    very was we were what when where which while who whom why will with would you your yours""".split()
)


@dataclass(frozen=True)
class SearchConfig:
    """Knobs of hybrid search; `DEFAULT` is what the tools use. Measured on LoCoMo with
    bench/locomo_eval.py (numbers below are recall@10 there)."""

    # Small k makes rank 1 of a list count clearly more than rank 5 (1/11 against 1/15). With
    # the textbook k=60 (1/61 against 1/65) agreement on mediocre ranks outweighs a clear win:
    # 68.0 against 70.7.
    rrf_k: int = 10
    # Length of each fused list (KNN size per label). 30 ranks as well as 50 (70.1 against 70.0,
    # queries embedded by the int8 copy) and each KNN query returns fewer rows.
    candidates: int = 30
    # Best texts fetched per query word before the idf sum ranks them: at 50, texts holding
    # several of the words but ranked low for each were lost (69.5 against 70.7).
    term_candidates: int = 200
    # A word more than this share of the texts hold adds little (idf below log 2), and ranking
    # its matches is the costliest step of a query (30 ms for 100k matches): its matches are
    # fetched only when there are at most `term_candidates` of them anyway.
    max_term_share: float = 0.5
    vector_weight: float = 1.0
    text_weight: float = 1.0
    # Typo variants are a fallback for words that occur nowhere in the project, and what they
    # find counts this much: in the idf sum, and as the vote of an entity found only that way.
    # Below 1/(k+2) (0.083 at k=10), so a typo match alone cannot lift the vector's second
    # choice over its first ("player" is one edit from "played": Miles Davis must not pass John
    # Coltrane for "saxophone player"); it decides where nothing else does ("trumpit": no
    # vector hit clears `min_similarity`). LoCoMo: no effect.
    fuzzy_weight: float = 0.05
    fuzzy_min_len: int = 5  # shorter words have too many one-typo neighbours to be worth it
    # Vector candidates more than this (cosine) below the best one are not evidence: a tennis
    # player at 0.32 must not add a vote for "saxophone player" when the saxophonist scores 0.77.
    # LoCoMo: no effect (70.7 with and without).
    vector_margin: float | None = 0.25
    # Below this cosine a vector hit is noise for all-MiniLM-L6-v2 (unrelated short texts score
    # 0.0-0.3): "trumpit" is closest to Usain Bolt, at 0.25. LoCoMo: no effect. -1 disables it.
    min_similarity: float = 0.3
    drop_stopwords: bool = True
    # Each word costs an index lookup; a pasted page must not cost thousands of them.
    max_terms: int = 32
    # How long a search waits for the vectors of earlier writes before it runs without them
    # (only when the embedder is far behind; a failing one is not waited for at all).
    vector_wait_s: float = 5.0


DEFAULT = SearchConfig()

# term -> (idf, ids of the entities holding it, best first)
TermHits = dict[str, tuple[float, list[str]]]


def query_terms(query: str, config: SearchConfig = DEFAULT) -> list[str]:
    """Distinct lower-cased words of the query, function words dropped unless nothing else is left."""
    terms = list(dict.fromkeys(t.lower() for t in WORD.findall(query)))
    if config.drop_stopwords:
        content = [t for t in terms if t not in STOPWORDS]
        terms = content or terms
    return terms[: config.max_terms]


def fuzzy_candidates(terms: Sequence[str], config: SearchConfig = DEFAULT) -> list[str]:
    """Terms that may be typos worth one-edit variants: long enough, and not numbers."""
    return [t for t in terms if len(t) >= config.fuzzy_min_len and not t.isdigit()]


def idf(total: int, df: int) -> float:
    """BM25's idf: a word most texts hold ("caroline" in a chat with Caroline) counts for little."""
    total = max(total, df)  # a node count cached a moment ago may lag behind the index
    return math.log(1.0 + (total - df + 0.5) / (df + 0.5))


def rank_text(
    exact: Sequence[TermHits], typos: Sequence[TermHits], typo_weight: float, limit: int
) -> list[tuple[str, float]]:
    """The `limit` entities with the highest summed idf of the distinct query words they hold,
    best first, each with its vote: 1, or `typo_weight` for an entity found only through typo
    variants.

    Each word counts once per entity, at its best idf over the indexes that matched it, so an
    entity is one bag of words whatever node holds them: "davis trumpet" ranks Miles Davis
    (name + observation) above the Davis Cup (name only). The index's own score is not used:
    it does not add up the words of an any-word query, and on LoCoMo the idf sum alone ranked
    better than idf times that score (text alone, 50 texts a word: recall@10 62.9 against 59.4).
    """
    per_term: dict[str, dict[str, float]] = {}  # term -> entity -> its best idf for that term
    for lists, weight in ((exact, 1.0), (typos, typo_weight)):
        for hits in lists:
            for term, (term_idf, ids) in hits.items():
                value = weight * term_idf
                best = per_term.setdefault(term, {})
                for entity_id in ids:
                    if best.get(entity_id, 0.0) < value:
                        best[entity_id] = value
    scores: dict[str, float] = {}
    for term in sorted(per_term):  # a fixed order of addition, so equal sums stay equal
        for entity_id, value in per_term[term].items():
            scores[entity_id] = scores.get(entity_id, 0.0) + value
    as_written = {entity_id for hits in exact for _, ids in hits.values() for entity_id in ids}
    ranked = heapq.nsmallest(limit, scores, key=lambda entity_id: (-scores[entity_id], entity_id))
    return [(entity_id, 1.0 if entity_id in as_written else typo_weight) for entity_id in ranked]


def best_similarity(lists: Sequence[Sequence[tuple[str, float]]]) -> dict[str, float]:
    """Entity id -> its best cosine similarity over the lists (entity and observation KNN)."""
    best: dict[str, float] = {}
    for hits in lists:
        for entity_id, similarity in hits:
            best[entity_id] = max(similarity, best.get(entity_id, -1.0))
    return best


def vector_ranking(similarity: dict[str, float], config: SearchConfig = DEFAULT) -> list[str]:
    ranked = sorted(similarity, key=lambda entity_id: (-similarity[entity_id], entity_id))
    if not ranked:
        return ranked
    floor = config.min_similarity
    if config.vector_margin is not None:
        floor = max(floor, similarity[ranked[0]] - config.vector_margin)
    return [entity_id for entity_id in ranked if similarity[entity_id] >= floor]


def rrf(rankings: Sequence[Sequence[tuple[str, float]]], k: int) -> dict[str, float]:
    """Reciprocal rank fusion of lists of (entity id, weight of this entry's vote)."""
    scores: dict[str, float] = {}
    for ranking in rankings:
        for rank, (entity_id, weight) in enumerate(ranking):
            if weight > 0:
                scores[entity_id] = scores.get(entity_id, 0.0) + weight / (k + rank + 1)
    return scores


class SearchService:
    def __init__(self, ctx: GraphContext, config: SearchConfig = DEFAULT) -> None:
        # Projects whose search indexes were seen operational (they stay so until the database
        # restarts: `forget_database_state`).
        self._indexes_ready: set[str] = set()
        # project -> (when counted, the process's write count then, nodes per label)
        self._totals_cache: dict[str, tuple[float, int, dict[str, int]]] = {}
        self.ctx = ctx
        self.config = config

    def forget_database_state(self) -> None:
        """The database restarted (it rebuilds its indexes) or was replaced: check again."""
        self._indexes_ready.clear()
        self._totals_cache.clear()

    async def entities(self, project: str, query: str, limit: int = 10) -> list[tuple[str, float]]:
        """Best entity ids for `query`, with fused scores, best first."""
        if not isinstance(query, str) or not query.strip():
            raise EmptyQuery("Query must not be empty.")
        limits.text(query, "query", max_len=limits.MAX_TEXT)
        limits.limit(limit)
        await self._check_indexes(project)
        cfg = self.config
        k = max(cfg.candidates, limit)
        # The query embedding runs in a thread; the full-text and name lookups overlap with it.
        exact, similarity, text = await asyncio.gather(
            self.ctx.read(project, "MATCH (e:Entity {name: $name}) RETURN e.id", {"name": query.strip()}),
            self._vector(project, query, k),
            self._text(project, query_terms(query, cfg), k),
        )
        vector = [(entity_id, cfg.vector_weight) for entity_id in vector_ranking(similarity, cfg)]
        scores = rrf([vector, [(entity_id, cfg.text_weight * vote) for entity_id, vote in text]], cfg.rrf_k)
        top = max(scores.values(), default=0.0) + 1.0
        for (entity_id,) in exact:
            scores[entity_id] = top
        # Equal fused scores are common (rank 1 of one list against rank 1 of the other): the
        # cosine similarity, the one score comparable across all candidates, breaks the tie.
        ranked = sorted(scores.items(), key=lambda item: (-item[1], -similarity.get(item[0], -2.0), item[0]))
        return ranked[:limit]

    async def _check_indexes(self, project: str) -> None:
        """Refuse, clearly, to search while FalkorDB rebuilds indexes after a restart.

        Meanwhile vector queries fail and full-text queries find nothing, which would read as
        "no match"; a project with no indexes yet (never written) simply has nothing to find.
        Indexes just created (a project's first write) are built in the background too, within
        milliseconds: a search waits up to `INDEX_WAIT_S` for them before refusing."""
        if project in self._indexes_ready:
            return
        deadline = time.monotonic() + INDEX_WAIT_S
        while True:
            rows = await self.ctx.read(project, "CALL db.indexes() YIELD label, status RETURN label, status")
            building = sorted({label for label, status in rows if label in LABELS and status != "OPERATIONAL"})
            if not building or time.monotonic() >= deadline:
                break
            await asyncio.sleep(0.05)
        if building:
            raise IndexNotFound(
                f"The search indexes of project {project!r} ({', '.join(building)}) are being rebuilt after "
                "the database started; search is back in a moment (about a minute per 100k vectors)."
            )
        if rows:
            self._indexes_ready.add(project)

    async def _vector(self, project: str, query: str, k: int) -> dict[str, float]:
        # Vectors of entities written just before this search may still be on their way
        # (polyg.core.vectorizer): waiting for them, while the query embeds, means a client
        # always finds what it just wrote. Usually there is nothing to wait for.
        vector, settled = await asyncio.gather(
            self.ctx.embed_query(query), self.ctx.vectors.settle(project, self.config.vector_wait_s)
        )
        if not settled:
            log.warning("search runs before the vectors of earlier writes are stored", extra={"project": project})
        # One query per index, at once: FalkorDB runs them on two threads.
        param = VectorParam(vector)
        lists = await asyncio.gather(*(self._knn(project, label, param, k) for label in LABELS))
        return best_similarity(lists)

    async def _knn(self, project: str, label: str, vector: VectorParam, k: int) -> list[tuple[str, float]]:
        owner, returns = self._owner(label)
        # The index is cosine: `score` is the distance 1 - cos.
        rows = await self._rows(
            project,
            f"CALL db.idx.vector.queryNodes('{label}', 'embedding', $k, vecf32($v)) YIELD node, score "
            f"{owner}RETURN {returns}, 1.0 - score",
            {"k": k, "v": vector},
        )
        return [(entity_id, float(similarity)) for entity_id, similarity in rows]

    async def _text(self, project: str, terms: list[str], k: int) -> list[tuple[str, float]]:
        """Entities holding the query words, best first; a word that occurs nowhere in the project
        is looked up by its one-typo variants instead. Only then: variants of a word that does
        occur would add look-alikes ("player" finding "played")."""
        if not terms:
            return []
        per_term = max(self.config.term_candidates, k)
        totals = await self._totals(project)
        exact = await self._term_hits(project, terms, per_term, totals)
        found = {term for hits in exact for term in hits}
        missing = [t for t in fuzzy_candidates(terms, self.config) if t not in found]
        typos: list[TermHits] = []
        if missing:
            typos = await self._term_hits(project, [f"%{t}%" for t in missing], per_term, totals)
        return rank_text(exact, typos, self.config.fuzzy_weight, k)

    async def _totals(self, project: str) -> dict[str, int]:
        """Nodes per searchable label: what a word's document frequency is measured against.
        Only the bare `MATCH (n:L) RETURN count(n)` is answered from the label's size; any other
        form (a UNION, a subquery) scans every node: 2 ms at 10k entities.

        Counted again after this process writes to the project, and otherwise at most every
        `TOTALS_TTL_S` (other processes' writes): an idf barely moves in the meantime, and the
        two counts were a millisecond of each search's critical path."""
        now, writes = time.monotonic(), self.ctx.writes.get(project, 0)
        cached = self._totals_cache.get(project)
        if cached is not None and cached[1] == writes and now - cached[0] < TOTALS_TTL_S:
            return cached[2]
        counts = await asyncio.gather(
            *(self._rows(project, f"MATCH (n:{label}) RETURN count(n)", {}) for label in LABELS)
        )
        totals = {label: int(rows[0][0]) if rows else 0 for label, rows in zip(LABELS, counts, strict=True)}
        self._totals_cache[project] = (now, writes, totals)
        return totals

    async def _term_hits(self, project: str, terms: list[str], k: int, totals: dict[str, int]) -> list[TermHits]:
        """Per label, per query term its nodes hold: its idf among them, and the entities of its
        best k matches (none for a word too common to be worth fetching). One round trip."""
        branches = []
        for label in LABELS:
            owner, returns = self._owner(label)
            # A subquery per term, so that ORDER BY ... LIMIT applies per term; collect() keeps a
            # row for terms whose matches are not fetched. id(node) breaks ties in the score
            # (frequent: the score is coarse) the same way every time, without reading a
            # property of every match.
            branches.append(
                f"UNWIND $terms AS t "
                f"CALL {{ WITH t CALL db.idx.fulltext.queryNodes('{label}', t) YIELD node RETURN count(node) AS df }} "
                f"CALL {{ WITH t, df WITH t WHERE df > 0 AND (df <= $k OR df <= $share * ${label}) "
                f"CALL db.idx.fulltext.queryNodes('{label}', t) YIELD node, score "
                f"WITH node ORDER BY score DESC, id(node) LIMIT $k {owner}RETURN collect({returns}) AS ids }} "
                f"RETURN '{label}' AS label, t AS term, df, ids"
            )
        rows = await self._rows(
            project,
            " UNION ALL ".join(branches),
            {
                "terms": terms,
                "k": k,
                "share": self.config.max_term_share,
                **{label: totals.get(label, 0) for label in LABELS},
            },
        )
        hits: dict[str, TermHits] = {label: {} for label in LABELS}
        for label, term, df, ids in rows:
            if df > 0:
                hits[label][term] = (idf(totals.get(label, 0), df), list(ids))
        return [hits[label] for label in LABELS]

    @staticmethod
    def _owner(label: str) -> tuple[str, str]:
        """Match clause and id expression that map a hit on `label` to its entity."""
        if label == "Entity":
            return "", "node.id"
        return "MATCH (e:Entity)-[:HAS_OBSERVATION]->(node) ", "e.id"

    async def _rows(self, project: str, cypher: str, params: dict[str, object]) -> list[Row]:
        try:
            return await self.ctx.read(project, cypher, params)
        except StoreError as exc:
            if not _no_vector_index(exc):
                raise
        # FalkorDB answers a vector query this way both when the label has no vector index (a
        # project with nothing embedded yet: nothing to find) and while it builds one (after
        # a restart, even if this process saw it ready before): find out which.
        self._indexes_ready.discard(project)
        self._totals_cache.pop(project, None)
        await self._check_indexes(project)  # raises IndexNotFound while an index is being built
        try:
            return await self.ctx.read(project, cypher, params)
        except StoreError as exc:
            if _no_vector_index(exc):
                return []
            raise


# What FalkorDB answers to `db.idx.vector.queryNodes` on a label without a usable vector index:
# the property was never set in the graph, or the index is missing or still being built. Only
# these: any other store error (an index error included) is an error, not "no match".
_NO_VECTOR_INDEX = (
    "Attempted to access undefined attribute",
    "Invalid arguments for procedure 'db.idx.vector.queryNodes'",
)


def _no_vector_index(exc: StoreError) -> bool:
    return any(text in exc.message for text in _NO_VECTOR_INDEX)
