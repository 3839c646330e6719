"""Hybrid entity search: vector KNN and full text over entities and their observations,
fused by reciprocal rank; an exact name match always ranks first.

Two ranked lists of entity ids are fused, one per kind of evidence. Each counts an entity
once, whether it was found through the entity's own node (name, type, description) or through
its observations, so that no kind of evidence votes twice for the same entity:

- vector: KNN over entity and observation embeddings, ranked by each entity's best cosine
  similarity, cut below a noise floor; a near miss (far below the best hit) is listed without
  a vote;
- text: full-text matches of the query's words, ranked by the summed idf of the words an
  entity holds. In a small project, whose few texts make an idf noisy, each idf leans on how
  informative the word is in English at large (`polyg.core.text.word_prior`): among 14 musicians
  "player" is held by fewer texts than "saxophonist", yet says less. A word also matches the
  words it is a stem of ("saxophone" finds "saxophonist", "drums" finds "drummer"), and an
  "-o" word its "-ist" noun ("piano" finds "pianist"); a word that occurs nowhere in the
  project is replaced by its one- and two-typo variants, which count less.

Reciprocal rank fusion needs no calibration between cosine and text scores, which is why it is
used rather than a weighted sum. Its blind spot is that it ignores score gaps: an entity found
by both lists wins over one that only one list found, however clear that list's verdict. A
near miss of the vector list therefore gets no vote ("New Orleans trumpet player" for
"saxophone player", 0.24 below the saxophonist's cosine, must not add a vote to the text
list's "player"), yet stays a candidate after every voted entity, for callers that expand
from the hits; and when even the best vector hit is near noise (a misspelt name is close to
nothing) the vector list's votes shrink, so that a typo match is not outvoted by noise.

The constants of `DEFAULT` are measured on the LoCoMo dev split (bench/quality/locomo_eval.py; the
figures are in bench/notes/2026-11-27-measured-choices.md) and held to the corpora of tests/test_search_quality.py, some
of whose queries were written down before the ranking was changed and not tuned on.
"""

from __future__ import annotations

import asyncio
import heapq
import logging
import math
import re
import time
import unicodedata
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Literal

from polyg.core import degraded, limits
from polyg.core.graph.context import GraphContext
from polyg.core.graph.embeddable import REGISTRY, SearchTarget
from polyg.core.model import Hit
from polyg.core.text.word_prior import informativeness
from polyg.errors import EmbeddingError, EmptyQuery, IndexNotFound, InvalidParams, StoreError
from polyg.store.falkor import Row, VectorParam
from polyg.store.names import CHUNK, ENTITY, EVENT, Label
from polyg.store.queries import search as q

log = logging.getLogger(__name__)

# What an entity search reads (entities and their observations) and what a chunk search reads:
# the embeddable registry's targets whose hits count for each.
ENTITY_TARGETS = REGISTRY.search_targets(ENTITY)
CHUNK_TARGETS = REGISTRY.search_targets(CHUNK)
TOTALS_TTL_S = 2.0

# Only these reach the full-text query syntax: every operator (| - % * @ ~ " ...) is dropped.
WORD = re.compile(r"\w+", re.UNICODE)

# Function words carry no topic, yet the full-text index keeps them (it has no stop list), so
# "when did she go to the park" would match nearly every text through "the" and "to", and cost
# an index scan each. Dropped from the text query unless the query is nothing but them.
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
    """Knobs of hybrid search; `DEFAULT` is what the tools use. What each is worth on LoCoMo
    (bench/quality/locomo_eval.py `--configs all`) is recorded in bench/notes/2026-11-27-measured-choices.md."""

    # Small k makes rank 1 of a list count clearly more than rank 5 (1/11 against 1/15).
    rrf_k: int = 10
    candidates: int = 30  # length of each fused list (KNN size per label)
    # Best texts fetched per query word before the idf sum ranks them: fewer loses texts that
    # hold several of the words but rank low for each.
    term_candidates: int = 200
    # A word more than this share of the texts hold adds little (idf below log 2), and ranking
    # its matches is the costliest step of a query: its matches are fetched only when there
    # are at most `term_candidates` of them anyway.
    max_term_share: float = 0.5
    # Nor, when set, a word more texts hold than this, whatever their share: ranking a word's
    # matches costs time in proportion to them, which in a large corpus (100k document chunks)
    # outgrows everything else a search does. None: no such bound.
    max_term_matches: int | None = None
    vector_weight: float = 1.0
    text_weight: float = 1.0
    # What a match through a word's stem ("saxophon*" for "saxophone") adds to the idf sum,
    # against the word as written; 0 disables stem lookups. Shorter stems match too much.
    stem_weight: float = 1.0
    stem_min_len: int = 4
    # The project's idf is blended with each word's background informativeness
    # (`polyg.core.text.word_prior`) as if the background were this many texts: in a project of N
    # texts a word's idf is scaled by 1 - a + a * informativeness, a = this / (N + this), so
    # the prior settles a small project's noisy counts and fades as the project grows. 0: the
    # project's idf alone.
    background_texts: int = 50
    # An "-o" word also matches its "-ist" agent noun ("piano" -> "pianist", "cello" ->
    # "cellist"), at `stem_weight`: its stem ("piano*") does not reach it.
    agent_nouns: bool = True
    # Typo variants are a fallback for words that occur nowhere in the project, not even by
    # their stem, so they never turn "player" into "played". One edit from `fuzzy_min_len`
    # letters, two ("Colrtane") from `fuzzy2_min_len`: shorter words have too many neighbours.
    fuzzy_weight: float = 0.7
    fuzzy_min_len: int = 5
    fuzzy2_weight: float = 0.5
    fuzzy2_min_len: int = 7
    # Vector candidates more than this (cosine) below the best one get no vote in the fusion
    # (they are listed after every voted entity): a tennis player must not add a vote for
    # "saxophone player" when a saxophonist scores far higher. Not applied when the vector
    # list is the only one (nothing to add a second vote to).
    vector_margin: float | None = 0.2
    # Below this cosine a vector hit is noise for all-MiniLM-L6-v2 (unrelated short texts score
    # 0.0-0.3). -1 disables it.
    min_similarity: float = 0.3
    # The vector list's votes scale with its best hit, from 0 at `min_similarity` to 1 at this:
    # for "Rolins" the closest text is a sprinter at 0.35, which must not outvote the typo
    # match on Sonny Rollins. None: every vector vote is 1.
    solid_similarity: float | None = 0.5
    drop_stopwords: bool = True
    # Each word costs index lookups; a pasted page must not cost thousands of them.
    max_terms: int = 32
    # How long a search waits for the vectors of earlier writes before it runs without them
    # (only when the embedder is far behind; a failing one is not waited for at all).
    vector_wait_s: float = 5.0


DEFAULT = SearchConfig()
# Document chunks are many and long: a word in more than 1,000 of them is left to the vector
# side (its idf is then at most log(total / 1000); the figures are in bench/notes/2026-11-27-measured-choices.md).
CHUNK_SEARCH = replace(DEFAULT, max_term_matches=1000)
# Memory's semantic search keeps only hits similar to the query (its threshold), so the words
# reorder what the vectors find rather than find more: each word's best `candidates` texts, not
# 200, and a word more than 300 texts hold is left to the vector side. Its full-text work then
# ends before the query's embedding does (the figures are in bench/notes/2026-11-27-memory.md).
SEMANTIC_SEARCH = replace(DEFAULT, term_candidates=DEFAULT.candidates, max_term_matches=300)


@dataclass(frozen=True)
class SearchPreset:
    """What a search reads and ranks by, under a name the toolsets ask for; the knobs are the
    service's `SearchConfig`.

    `counts_for`: the label whose nodes are returned (the registry's targets that count for
    it are searched: an entity search reads observations too); `vector` / `text`: which kinds
    of evidence are gathered and fused (one alone ranks by it: cosine similarity above the
    noise floor, or the summed idf of the words); `exact_names`: an entity named exactly as the
    query ranks first."""

    name: str
    counts_for: Label
    vector: bool = True
    text: bool = True
    exact_names: bool = False
    config: SearchConfig | None = None  # None: the service's own


PresetName = Literal["default", "semantic", "vector_only", "text_only", "chunks", "events"]
PRESETS: dict[str, SearchPreset] = {
    preset.name: preset
    for preset in (
        # Entities by meaning and words, an exact name first: memory-compat's search_nodes,
        # graphrag's seeds, knowledge's `combined` strategy.
        SearchPreset("default", ENTITY, exact_names=True),
        # The same with a lighter full-text side: memory's search_semantic (SEMANTIC_SEARCH).
        SearchPreset("semantic", ENTITY, exact_names=True, config=SEMANTIC_SEARCH),
        # Knowledge's `vector` and `text` strategies: one kind of evidence, no name rule (text
        # alone neither embeds the query nor waits for pending vectors).
        SearchPreset("vector_only", ENTITY, text=False),
        SearchPreset("text_only", ENTITY, vector=False),
        # Document chunks by meaning and words: retrieval's graph_retrieve.
        SearchPreset("chunks", CHUNK, config=CHUNK_SEARCH),
        # Events (memories among them) by meaning and words: recall's memories.
        SearchPreset("events", EVENT),
    )
}


def preset(name: str) -> SearchPreset:
    try:
        return PRESETS[name]
    except KeyError:
        raise InvalidParams(f"Unknown search preset {name!r}: use one of {', '.join(PRESETS)}.") from None


# term -> (idf, ids of the entities holding it, best first)
TermHits = dict[str, tuple[float, list[str]]]

# Endings stripped (the first listed that leaves a stem of `stem_min_len`) to find the stem a word
# shares with its relatives: the index's own stemmer keeps "saxophone"/"saxophonist" and
# "drums"/"drummer" apart.
SUFFIXES = ("ations", "ation", "ists", "ings", "ers", "ies", "ist", "ing", "ed", "er", "es", "e", "s", "y")


def query_terms(query: str, config: SearchConfig = DEFAULT) -> list[str]:
    """Distinct lower-cased words of the query, function words dropped unless nothing else is left."""
    terms = list(dict.fromkeys(t.lower() for t in WORD.findall(query)))
    if config.drop_stopwords:
        content = [t for t in terms if t not in STOPWORDS]
        terms = content or terms
    return terms[: config.max_terms]


def stem(term: str, min_len: int = DEFAULT.stem_min_len) -> str | None:
    """The word less one common ending ("saxophone" -> "saxophon", "drums" -> "drum"), or the
    word itself if it has none; None for anything but letters and for stems under `min_len`."""
    if not term.isalpha():
        return None
    for suffix in SUFFIXES:
        if term.endswith(suffix) and len(term) - len(suffix) >= min_len:
            return term[: -len(suffix)]
    return term if len(term) >= min_len else None


def agent_noun(term: str, min_len: int = DEFAULT.stem_min_len) -> str | None:
    """The "-ist" noun of an "-o" word ("piano" -> "pianist"), which its stem does not reach;
    None for any other word, and for stems under `min_len` letters."""
    if term.isalpha() and term.endswith("o") and len(term) - 1 >= min_len:
        return f"{term[:-1]}ist"
    return None


def fuzzy_candidates(terms: Sequence[str], config: SearchConfig = DEFAULT) -> list[str]:
    """Terms that may be typos worth one-edit variants: long enough, and not numbers."""
    return [t for t in terms if len(t) >= config.fuzzy_min_len and not t.isdigit()]


def idf(total: int, df: int) -> float:
    """BM25's idf: a word most texts hold ("caroline" in a chat with Caroline) counts for little."""
    total = max(total, df)  # a node count cached a moment ago may lag behind the index
    return math.log(1.0 + (total - df + 0.5) / (df + 0.5))


def rank_text(
    evidence: Sequence[tuple[Sequence[TermHits], float]],
    limit: int,
    term_weights: Mapping[str, float] | None = None,
) -> list[str]:
    """The `limit` entities with the highest summed idf of the distinct query words they hold,
    best first. `evidence` is one (hits per label, weight) per kind of match: as written, by
    stem, by typo; a match counts its idf times its kind's weight.

    Each word counts once per entity, at its best over the indexes and kinds of match, so an
    entity is one bag of words whatever node holds them: "davis trumpet" ranks Miles Davis
    (name + observation) above the Davis Cup (name only). The index's own score is not used:
    it does not add up the words of an any-word query, and ranked worse on LoCoMo.
    `term_weights`: a factor per query word (1 for a word it does not name).
    """
    weights = term_weights or {}
    per_term: dict[str, dict[str, float]] = {}  # term -> entity -> its best value for that term
    for lists, weight in evidence:
        for hits in lists:
            for term, (term_idf, ids) in hits.items():
                value = weight * term_idf * weights.get(term, 1.0)
                best = per_term.setdefault(term, {})
                for entity_id in ids:
                    if best.get(entity_id, 0.0) < value:
                        best[entity_id] = value
    scores: dict[str, float] = {}
    for term in sorted(per_term):  # a fixed order of addition, so equal sums stay equal
        for entity_id, value in per_term[term].items():
            scores[entity_id] = scores.get(entity_id, 0.0) + value
    return heapq.nsmallest(limit, scores, key=lambda entity_id: (-scores[entity_id], entity_id))


def background_weights(terms: Sequence[str], texts: int, config: SearchConfig = DEFAULT) -> dict[str, float]:
    """Each query word's factor on its idf in a project of `texts` texts
    (`SearchConfig.background_texts`): how informative the word is in English at large, the
    more so the fewer texts the project's own counts rest on."""
    if config.background_texts <= 0:
        return {}
    share = config.background_texts / (texts + config.background_texts)
    return {t: 1.0 - share + share * informativeness(t) for t in terms}


def best_similarity(lists: Sequence[Sequence[tuple[str, float]]]) -> dict[str, float]:
    """Entity id -> its best cosine similarity over the lists (entity and observation KNN)."""
    best: dict[str, float] = {}
    for hits in lists:
        for entity_id, similarity in hits:
            best[entity_id] = max(similarity, best.get(entity_id, -1.0))
    return best


def vector_ranking(
    similarity: dict[str, float], config: SearchConfig = DEFAULT, *, fused: bool = True
) -> list[tuple[str, float]]:
    """Vector hits above the noise floor, best first, each with its vote
    (`SearchConfig.solid_similarity`). With `fused` (another list is fused with this one), a
    hit more than `vector_margin` below the best gets no vote: it is a near miss, kept as a
    candidate but never a second vote for an entity the other list found."""
    ranked = sorted(similarity, key=lambda entity_id: (-similarity[entity_id], entity_id))
    if not ranked:
        return []
    best = similarity[ranked[0]]
    floor = config.min_similarity
    voting = floor
    if fused and config.vector_margin is not None:
        voting = max(floor, best - config.vector_margin)
    vote = config.vector_weight
    solid = config.solid_similarity
    if solid is not None and solid > config.min_similarity:
        vote *= min(1.0, max(0.0, (best - config.min_similarity) / (solid - config.min_similarity)))
    return [
        (entity_id, vote if similarity[entity_id] >= voting else 0.0)
        for entity_id in ranked
        if similarity[entity_id] >= floor
    ]


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
        # project -> (when counted, the process's write count then, nodes per label)
        self._totals_cache: dict[str, tuple[float, int, dict[str, int]]] = {}
        self.ctx = ctx
        self.config = config

    def forget_database_state(self) -> None:
        """The database restarted (it rebuilds its indexes) or was replaced: check again."""
        self.ctx.indexes.forget_all()
        self._totals_cache.clear()

    async def entities(self, project: str, query: str, limit: int = 10) -> list[tuple[str, float]]:
        """Best entity ids for `query`, with fused scores, best first (the `default` preset)."""
        return [(hit.node_id, hit.fused) for hit in await self.search(project, query, "default", limit)]

    async def search(
        self,
        project: str,
        query: str,
        name: PresetName,
        limit: int = 10,
        *,
        query_vector: asyncio.Future[list[float]] | None = None,
    ) -> list[Hit]:
        """Best nodes for `query` as the named preset searches, best first, each with its
        separate scores (fused, cosine, text vote; None for evidence the preset does not use).
        `query_vector`: the query's embedding under way, for a caller that needs it too."""
        chosen = preset(name)
        return await self.hits(
            project,
            query,
            REGISTRY.search_targets(chosen.counts_for),
            limit,
            exact_names=chosen.exact_names,
            by_vector=chosen.vector,
            by_text=chosen.text,
            query_vector=query_vector,
            config=chosen.config,
        )

    async def hits(
        self,
        project: str,
        query: str,
        targets: Sequence[SearchTarget],
        limit: int = 10,
        *,
        exact_names: bool = False,
        by_vector: bool = True,
        by_text: bool = True,
        query_vector: asyncio.Future[list[float]] | None = None,
        config: SearchConfig | None = None,
    ) -> list[Hit]:
        """Best nodes for `query` over `targets` (each hit counted for its owner), best first;
        with `exact_names`, an entity named exactly as the query ranks first; `by_vector` and
        `by_text` choose the kinds of evidence gathered. `config`: this search's knobs, instead
        of the service's."""
        if not isinstance(query, str) or not query.strip():
            raise EmptyQuery("Query must not be empty.")
        limits.text(query, "query", max_len=limits.MAX_TEXT)
        limits.limit(limit)
        # Degrade, don't fail (polyg.core.degraded): while FalkorDB builds the indexes, words
        # are matched by a scan of the nodes and nothing is ranked by meaning; when the
        # embedder fails, the words alone rank. The call's result says which.
        building = False
        try:
            await self.ctx.indexes.check(project)
        except IndexNotFound:
            if not degraded.note(degraded.VECTOR_INDEX_BUILDING):
                raise
            building = True
        cfg = config or self.config
        k = max(cfg.candidates, limit)
        terms = query_terms(query, cfg)
        # The query embedding runs in a thread; the full-text and name lookups overlap with it.
        # Read as a name is stored (stripped, NFC). The name index also matches names that differ
        # in surrounding whitespace (stored before names were normalised): compared here.
        name = unicodedata.normalize("NFC", query.strip())
        exact, found_similarity, text = await asyncio.gather(
            self._exact_names(project, name) if exact_names else _nothing(),
            self._vector_or_none(project, query, k, targets, query_vector) if by_vector and not building else _none(),
            self._text(project, terms, k, targets, cfg, scan=building) if by_text or building else _no_words(),
        )
        similarity = found_similarity or {}
        if by_vector and found_similarity is None and not (by_text or building):
            text = await self._text(project, terms, k, targets, cfg)  # a vector-only search answers by words
        by_text = by_text or found_similarity is None
        votes = [(entity_id, cfg.text_weight) for entity_id in text]
        vector = vector_ranking(similarity, cfg, fused=by_text)
        scores = rrf([vector, votes], cfg.rrf_k)
        # Vector hits without a vote (near misses, or all hits when the best is near noise)
        # follow every voted entity, by cosine: a caller that expands from the hits (graph
        # search) or wants more than the votes found still sees them.
        for entity_id, _ in vector:
            scores.setdefault(entity_id, 0.0)
        top = max(scores.values(), default=0.0) + 1.0
        for entity_id, found in exact:
            if found == name:
                scores[entity_id] = top
        # Equal fused scores are common (rank 1 of one list against rank 1 of the other): the
        # cosine similarity, the one score comparable across all candidates, breaks the tie.
        ranked = sorted(scores.items(), key=lambda item: (-item[1], -similarity.get(item[0], -2.0), item[0]))
        # The text list's own vote (its reciprocal rank), kept apart from the fused score.
        text_votes = rrf([votes], cfg.rrf_k)
        return [
            Hit(node_id, fused, similarity.get(node_id), text_votes.get(node_id)) for node_id, fused in ranked[:limit]
        ]

    async def _vector_or_none(
        self,
        project: str,
        query: str,
        k: int,
        targets: Sequence[SearchTarget],
        query_vector: asyncio.Future[list[float]] | None,
    ) -> dict[str, float] | None:
        """`_vector`, or None (noted) when there is no ranking by meaning to be had: the vector
        index is being built, or the embedder fails. Raised as before where nobody collects
        the note (polyg.core.degraded.note)."""
        try:
            return await self._vector(project, query, k, targets, query_vector)
        except IndexNotFound:
            if not degraded.note(degraded.VECTOR_INDEX_BUILDING):
                raise
        except EmbeddingError as exc:
            if not degraded.note(degraded.embedder_failed(exc.message)):
                raise
        return None

    async def _exact_names(self, project: str, name: str) -> list[Row]:
        return await q.exact_names(self.ctx, project, name)

    async def _vector(
        self,
        project: str,
        query: str,
        k: int,
        targets: Sequence[SearchTarget],
        query_vector: asyncio.Future[list[float]] | None = None,
    ) -> dict[str, float]:
        # Vectors of entities written just before this search may still be on their way
        # (polyg.core.graph.vectorizer): waiting for them, while the query embeds, means a client
        # always finds what it just wrote. Usually there is nothing to wait for.
        vector, settled = await asyncio.gather(
            self.ctx.embed_query(query) if query_vector is None else query_vector,
            self.ctx.vectors.settle(project, self.config.vector_wait_s),
        )
        if not settled:
            log.warning("search runs before the vectors of earlier writes are stored", extra={"project": project})
        # One query per index, at once: FalkorDB runs them on two threads.
        param = VectorParam(vector)
        lists = await asyncio.gather(*(self._knn(project, target, param, k) for target in targets))
        return best_similarity(lists)

    async def _knn(self, project: str, target: SearchTarget, vector: VectorParam, k: int) -> list[tuple[str, float]]:
        rows = await self._rows(project, lambda: q.knn(self.ctx, project, target.query, vector, k))
        return [(entity_id, float(similarity)) for entity_id, similarity in rows]

    async def _text(
        self,
        project: str,
        terms: list[str],
        k: int,
        targets: Sequence[SearchTarget],
        config: SearchConfig | None = None,
        *,
        scan: bool = False,
    ) -> list[str]:
        """Nodes holding the query words, as written or by their stem, best first. A word
        that occurs nowhere in the project, not even by its stem, is looked up by its typo
        variants instead. Only then: variants of a word that does occur would add look-alikes
        ("player" finding "played"). With `scan` (the indexes are being built) the words and
        stems are found by reading every node's text, and typos are not looked up."""
        if not terms:
            return []
        cfg = config or self.config
        per_term = max(cfg.term_candidates, k)
        totals = await self._totals(project, tuple(target.label for target in targets))
        stems = {t: f"{s}*" for t in terms if cfg.stem_weight > 0 and (s := stem(t, cfg.stem_min_len))}
        agents: dict[str, str] = {}
        if cfg.agent_nouns and cfg.stem_weight > 0:
            agents = {t: f"{a}*" for t in terms if (a := agent_noun(t, cfg.stem_min_len))}
        terms_and_stems = list(dict.fromkeys([*terms, *stems.values(), *agents.values()]))
        found = await self._term_hits(project, terms_and_stems, per_term, totals, targets, cfg, scan=scan)
        evidence = [
            ([{t: hits[t] for t in terms if t in hits} for hits in found], 1.0),
            ([{t: hits[p] for t, p in stems.items() if p in hits} for hits in found], cfg.stem_weight),
            ([{t: hits[p] for t, p in agents.items() if p in hits} for hits in found], cfg.stem_weight),
        ]
        seen = {term for lists, _ in evidence for hits in lists for term in hits}
        missing = (
            [t for t in fuzzy_candidates(terms, cfg) if t not in seen] if cfg.fuzzy_weight > 0 and not scan else []
        )
        if missing:
            near = {t: f"%{t}%" for t in missing}
            far = {t: f"%%{t}%%" for t in missing if cfg.fuzzy2_weight > 0 and len(t) >= cfg.fuzzy2_min_len}
            typos = await self._term_hits(project, [*near.values(), *far.values()], per_term, totals, targets, cfg)
            for variants, weight in ((near, cfg.fuzzy_weight), (far, cfg.fuzzy2_weight)):
                evidence.append(([{t: hits[v] for t, v in variants.items() if v in hits} for hits in typos], weight))
        texts = max((totals.get(str(target.label), 0) for target in targets), default=0)
        return rank_text(evidence, k, background_weights(terms, texts, cfg))

    async def _totals(self, project: str, wanted: Sequence[str] = ()) -> dict[str, int]:
        """Nodes per searchable label: what a word's document frequency is measured against.
        Counted one label per query: only that form is answered from the label's size (any other
        scans every node: 2 ms at 10k entities).

        Counted again after this process writes to the project, and otherwise at most every
        `TOTALS_TTL_S` (other processes' writes): an idf barely moves in the meantime, and the
        two counts were a millisecond of each search's critical path. `wanted`: labels searched
        beyond the registry's (a caller's own targets), counted as well."""
        now, writes = time.monotonic(), self.ctx.writes.get(project, 0)
        cached = self._totals_cache.get(project)
        if (
            cached is not None
            and cached[1] == writes
            and now - cached[0] < TOTALS_TTL_S
            and all(label in cached[2] for label in wanted)
        ):
            return cached[2]
        labels = tuple(dict.fromkeys([*REGISTRY.search_labels(), *wanted]))
        counts = await asyncio.gather(*(q.count_nodes(self.ctx, project, Label(label)) for label in labels))
        totals: dict[str, int] = dict(zip(labels, counts, strict=True))
        self._totals_cache[project] = (now, writes, totals)
        return totals

    async def _term_hits(
        self,
        project: str,
        terms: list[str],
        k: int,
        totals: dict[str, int],
        targets: Sequence[SearchTarget],
        config: SearchConfig,
        *,
        scan: bool = False,
    ) -> list[TermHits]:
        """Per label, per query term its nodes hold: its idf among them, and the entities of its
        best k matches (none for a word too common to be worth fetching). One round trip.

        A word's matches are fetched when there are at most k of them, or more up to the
        config's share of the label's nodes and its bound."""
        fetched: dict[str, int] = {}
        for target in targets:
            bound = math.floor(config.max_term_share * totals.get(target.label, 0))
            if config.max_term_matches is not None:
                bound = min(bound, config.max_term_matches)
            fetched[str(target.label)] = max(k, bound)
        labels = [target.label for target in targets]
        query = [target.query for target in targets]
        if scan:
            # The full-text syntax's stem ("saxophon*") is a substring to look for in a scan.
            fields = {str(t.label): REGISTRY[t.label].fulltext for t in targets}
            pairs = [[term, term.rstrip("*")] for term in terms]
            rows = await q.term_hits_scan(self.ctx, project, query, fields, pairs, k, fetched)
        else:
            rows = await self._rows(project, lambda: q.term_hits(self.ctx, project, query, terms, k, fetched))
        hits: dict[str, TermHits] = {label: {} for label in labels}
        for label, term, df, ids in rows:
            if df > 0:
                hits[label][term] = (idf(totals.get(label, 0), df), list(ids))
        return [hits[label] for label in labels]

    async def _rows(self, project: str, read: Callable[[], Awaitable[list[Row]]]) -> list[Row]:
        """`read()`, where a label without a usable vector index is nothing found (or a clear
        refusal while the index is being built)."""
        try:
            return await read()
        except StoreError as exc:
            if not _no_vector_index(exc):
                raise
        # FalkorDB answers a vector query this way both when the label has no vector index (a
        # project with nothing embedded yet: nothing to find) and while it builds one (after
        # a restart, even if this process saw it ready before): find out which.
        self.ctx.indexes.forget(project)
        self._totals_cache.pop(project, None)
        await self.ctx.indexes.check(project)  # raises IndexNotFound while an index is being built
        try:
            return await read()
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


async def _nothing() -> list[Row]:
    return []


async def _none() -> None:
    return None


async def _no_words() -> list[str]:
    return []


def _no_vector_index(exc: StoreError) -> bool:
    return any(text in exc.message for text in _NO_VECTOR_INDEX)
