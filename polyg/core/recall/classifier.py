"""The recall intent classifier (spec 003): which graphs a query needs, the things it names,
the time it refers to, which way a causal question looks, and a query for embedding search.

Rules answer by default. With an LLM configured, the spec's prompt is asked for the same
ClassifierOutput, which is then checked against the rules (names it reports must occur in the
query; a time the rules read from the words wins over the model's arithmetic) and merged; any
failure or timeout leaves the rules' answer.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Iterable, Sequence
from datetime import datetime

from polyg.core.recall.cues import asks_semantic, causal_direction, semantic_query
from polyg.core.recall.model import ClassifierOutput, EntityMention, Intent, ordered
from polyg.core.text.mentions import Mention, find_mentions, mask
from polyg.core.text.time import SYSTEM_CLOCK, Clock, parse_range
from polyg.core.text.timeref import Timeframe, asks_for_time, find_time_refs, timeframe
from polyg.errors import PolygError
from polyg.llm import LLM, Answer, Message, with_fallback

MAX_QUERY_CHARS = 4000
CLASSIFIER_MAX_TOKENS = 500

CLASSIFIER_PROMPT = """You are a query intent classifier for a multi-graph memory system.

Given a user query, extract:
1. INTENTS: Which graphs to query (semantic, temporal, causal, entity)
2. ENTITIES: Named entities mentioned (people, systems, projects, etc.)
3. TIMEFRAME: Any time references (dates, durations, "last week", etc.)
4. CAUSAL_DIRECTION: If asking "why" → upstream, if asking "what happens if" → downstream

Respond in JSON format.

Examples:
- "What do we know about the auth system?" → intents: [semantic, entity]
- "What happened last Tuesday?" → intents: [temporal], timeframe: relative
- "Why did the build fail?" → intents: [causal], causal_direction: upstream
- "Who owns the payment service?" → intents: [entity]

The current time is {reference}; give dates as ISO 8601.

User query: {query}"""

_TYPES = {"code": "Code", "service": "Service", "quoted": None, "known": None}
_HEAD_TYPES = {"team": "Team", "project": "Project", "service": "Service", "api": "API", "company": "Company"}


def rule_classify(
    query: str, reference: datetime, known_names: Sequence[str] = (), context: str | None = None
) -> ClassifierOutput:
    """The rules' reading of `query` (see the module docstring for what each field holds)."""
    text = _normalised(query)
    if not text:
        return ClassifierOutput(intents=["semantic"], semantic_query="", confidence=0.0)
    mentions = find_mentions(text, known_names)
    masked = mask(text, mentions)
    refs = find_time_refs(masked)
    direction = causal_direction(masked)
    intents: set[Intent] = set()
    if direction is not None:
        intents.add("causal")
    if refs or asks_for_time(masked):
        intents.add("temporal")
    if mentions:
        intents.add("entity")
    explicit_semantic = asks_semantic(masked)
    if explicit_semantic or not intents:
        intents.add("semantic")
    return ClassifierOutput(
        intents=ordered(intents),
        entities=[EntityMention(mention=m.text, type=_type_of(m)) for m in mentions],
        timeframe=timeframe(refs, reference),
        causal_direction=direction,
        semantic_query=semantic_query(text),
        confidence=_confidence(text, intents, explicit_semantic, direction),
    )


def rule_semantic_query(query: str) -> str:
    """The semantic query the rules form for `query`, known before it is classified (recall
    starts embedding it while the names it mentions are looked up)."""
    text = _normalised(query)
    return semantic_query(text) if text else ""


def _normalised(query: str) -> str:
    return " ".join(query[:MAX_QUERY_CHARS].split())


def _type_of(mention: Mention) -> str | None:
    if mention.kind == "name":
        last = mention.text.rsplit(" ", 1)[-1].lower()
        return _HEAD_TYPES.get(last)
    return _TYPES.get(mention.kind)


def _confidence(text: str, intents: set[Intent], explicit_semantic: bool, direction: str | None) -> float:
    """How often the rules' intents are exactly right for queries with these signals, measured
    on the development set (bench/quality/intent_bench.py reports the calibration)."""
    if intents == {"semantic"} and not explicit_semantic:
        score = 0.55  # nothing recognised: a topic lookup is only the best guess
    else:
        score = 0.9
    if len(intents) >= 3:
        score -= 0.15
    if direction == "both":
        score -= 0.1
    if len(text) > 300:
        score -= 0.15
    return round(max(0.05, min(score, 0.95)), 2)


class Classifier:
    """Rules, or an LLM checked against them (`llm` None: rules only)."""

    def __init__(self, llm: LLM | None = None, *, clock: Clock = SYSTEM_CLOCK, timeout_s: float | None = None) -> None:
        self.llm = llm
        self.clock = clock
        self._call = with_fallback(
            self._llm_classify if llm is not None else None, self._rules, name="recall classifier", timeout_s=timeout_s
        )

    async def classify(
        self,
        query: str,
        *,
        reference: datetime | None = None,
        known_names: Sequence[str] = (),
        context: str | None = None,
    ) -> Answer[ClassifierOutput]:
        at = reference or self.clock.now()
        return await self._call.run(query, at, tuple(known_names), context)

    @staticmethod
    def _rules(query: str, reference: datetime, known_names: Sequence[str], context: str | None) -> ClassifierOutput:
        return rule_classify(query, reference, known_names, context)

    async def _llm_classify(
        self, query: str, reference: datetime, known_names: Sequence[str], context: str | None
    ) -> ClassifierOutput:
        assert self.llm is not None
        text = _normalised(query)
        rules = rule_classify(text, reference, known_names, context)
        if not text:
            return rules
        prompt = CLASSIFIER_PROMPT.replace("{reference}", reference.isoformat()).replace("{query}", text)
        if context:
            prompt += f"\n\nConversation context: {context[:MAX_QUERY_CHARS]}"
        messages: list[Message] = [{"role": "user", "content": prompt}]
        proposed = await self.llm.complete_json(messages, ClassifierOutput, max_tokens=CLASSIFIER_MAX_TOKENS)
        return merge(text, proposed, rules, reference)


def merge(query: str, llm: ClassifierOutput, rules: ClassifierOutput, reference: datetime) -> ClassifierOutput:
    """The model's classification checked against the query and the rules."""
    lowered = query.lower()
    named = [e for e in llm.entities if e.mention.strip() and e.mention.strip().lower() in lowered]
    entities = _union(named, rules.entities)
    intents: set[Intent] = set(llm.intents)
    if rules.timeframe is not None:
        intents.add("temporal")
    if entities:
        intents.add("entity")
    tf = rules.timeframe or _checked_timeframe(llm.timeframe, reference)
    direction = (llm.causal_direction or rules.causal_direction or "upstream") if "causal" in intents else None
    agreement = set(rules.intents) == intents
    confidence = min(llm.confidence, 0.95) if agreement else min(llm.confidence, 0.95) * 0.85
    return ClassifierOutput(
        intents=ordered(intents),
        entities=entities,
        timeframe=tf,
        causal_direction=direction,
        semantic_query=(llm.semantic_query or rules.semantic_query or query)[:MAX_QUERY_CHARS],
        confidence=round(confidence, 2),
    )


def _union(first: Iterable[EntityMention], second: Iterable[EntityMention]) -> list[EntityMention]:
    out: list[EntityMention] = []
    for mention in [*first, *second]:
        key = mention.mention.strip().lower()
        if any(key in m.mention.lower() or m.mention.lower() in key for m in out):
            continue
        out.append(EntityMention(mention=mention.mention.strip(), type=mention.type))
    return out


def _checked_timeframe(proposed: Timeframe | None, reference: datetime) -> Timeframe | None:
    """The model's timeframe when its value is a readable time; else kept as relative words."""
    if proposed is None:
        return None
    try:
        parse_range(proposed.value, reference=reference)
    except (PolygError, ValueError, OverflowError):
        return Timeframe(type="relative", value=proposed.value)
    return proposed


MentionResolver = Callable[[str], Awaitable[str | None]]


async def resolve_mentions(output: ClassifierOutput, resolve: MentionResolver) -> ClassifierOutput:
    """`output` with each mention's stored entity id, where the graph has one."""
    ids = await asyncio.gather(*(resolve(m.mention) for m in output.entities))
    resolved = [m.model_copy(update={"resolved": i}) for m, i in zip(output.entities, ids, strict=True)]
    return output.model_copy(update={"entities": resolved})
