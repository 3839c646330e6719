"""What `remember` extracts from a memory by rules: entities, events (statements with a time,
resolved against the reference time), facts (subject-predicate-object) and causal links.

Rules stay conservative: an item is extracted only when its words say so, because a wrong link
in the graph costs more than a missing one (the memory itself is always stored and searchable).
A negated statement ("X did not cause Y", "Alice no longer works on Z") adds nothing.
With an LLM configured, its extraction is used once checked against the text (names must
occur in it, times must read as times); any failure leaves the rules' extraction.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from datetime import datetime

from pydantic import BaseModel, Field

from polyg.core import sentences
from polyg.core.recall.mentions import capitalised_mid_sentence, find_mentions, mask
from polyg.core.recall.timeref import find_time_refs
from polyg.core.time import parse_instant, parse_range
from polyg.errors import PolygError
from polyg.llm import LLM, Answer, Message, with_fallback

MAX_PHRASE_CHARS = 300


@dataclass(frozen=True)
class ExtractedEntity:
    name: str
    type: str | None = None


@dataclass(frozen=True)
class ExtractedEvent:
    description: str
    occurred_at: datetime
    time_text: str
    entities: tuple[str, ...] = ()


@dataclass(frozen=True)
class ExtractedFact:
    subject: str
    predicate: str
    object: str


@dataclass(frozen=True)
class ExtractedCause:
    cause: str
    effect: str
    confidence: float
    evidence: str


@dataclass
class Extraction:
    entities: list[ExtractedEntity] = field(default_factory=list)
    events: list[ExtractedEvent] = field(default_factory=list)
    facts: list[ExtractedFact] = field(default_factory=list)
    causes: list[ExtractedCause] = field(default_factory=list)


_NEGATION = re.compile(r"\b(?:not|never|no longer|n['’]t|cannot|no)\b", re.IGNORECASE)

# Fact verbs, longest first, with the predicate they store.
_FACT_VERBS: tuple[tuple[str, str], ...] = (
    ("is owned by", "owned_by"),
    ("is managed by", "managed_by"),
    ("is maintained by", "maintained_by"),
    ("is located in", "located_in"),
    ("is based in", "based_in"),
    ("reports to", "reports_to"),
    ("works on", "works_on"),
    ("works at", "works_at"),
    ("works for", "works_for"),
    ("is working on", "works_on"),
    ("lives in", "lives_in"),
    ("moved to", "lives_in"),
    ("is married to", "married_to"),
    ("depends on", "depends_on"),
    ("runs on", "runs_on"),
    ("belongs to", "belongs_to"),
    ("is part of", "part_of"),
    ("owns", "owns"),
    ("maintains", "maintains"),
    ("leads", "leads"),
    ("manages", "manages"),
    ("uses", "uses"),
    ("joined", "member_of"),
    ("is a member of", "member_of"),
    ("prefers", "prefers"),
)
_FACT = re.compile(
    r"^(?P<subject>.+?) (?P<verb>" + "|".join(re.escape(v) for v, _ in _FACT_VERBS) + r") (?P<object>.+)$"
)
_PREDICATES = dict(_FACT_VERBS)

# Causal patterns: (regex, which group is the cause, confidence). Effect-first forms come first
# so "A because B" is not read as "A" causing anything.
_CAUSE_FORMS: tuple[tuple[re.Pattern[str], str, float], ...] = tuple(
    (re.compile(p, re.IGNORECASE), first, conf)
    for p, first, conf in (
        (r"^because (?:of )?(?P<a>.+?), (?P<b>.+)$", "a", 0.9),
        (r"^after (?P<a>.+? (?:failed|crashed|broke|went down|expired|stopped|ran out))\b,? (?P<b>.+)$", "a", 0.7),
        (r"^(?P<b>.+?),? (?:because of|because|due to|owing to|as a result of|thanks to) (?P<a>.+)$", "a", 0.9),
        (
            r"^(?P<b>.+?) (?:was|were|is|are|got|had been|has been) (?:caused|triggered|brought on) by (?P<a>.+)$",
            "a",
            0.9,
        ),
        (r"^(?P<b>.+?) (?:was|were|is) the (?:result|consequence) of (?P<a>.+)$", "a", 0.85),
        (r"^(?P<b>.+?) after (?P<a>.+? (?:failed|crashed|broke|went down|expired|stopped|ran out))$", "a", 0.7),
        (
            r"^(?P<a>.+?) (?:caused|causes|led to|leads to|resulted in|results in|triggered|triggers|"
            r"brought down|broke|made) (?P<b>.+)$",
            "a",
            0.9,
        ),
        (r"^(?P<a>.+?),? so (?P<b>.+)$", "a", 0.75),
    )
)


def extract(content: str, reference: datetime, known_names: tuple[str, ...] = ()) -> Extraction:
    """Entities, events, facts and causal links of `content` (see the module docstring)."""
    out = Extraction()
    seen_entities: set[str] = set()
    previous: str | None = None
    capitalised = capitalised_mid_sentence(content)
    for sentence in sentences.split(content):
        mentions = find_mentions(sentence, known_names, statement=True, capitalised=capitalised)
        for m in mentions:
            if m.text.lower() not in seen_entities:
                seen_entities.add(m.text.lower())
                out.entities.append(ExtractedEntity(m.text, _entity_type(m.kind)))
        names = tuple(m.text for m in mentions)
        event = _event(sentence, mask(sentence, mentions), reference, names)
        if event is not None:
            out.events.append(event)
        fact = _fact(sentence)
        if fact is not None:
            out.facts.append(fact)
            for name in (fact.subject, fact.object):
                if name[:1].isupper() and name.lower() not in seen_entities:
                    seen_entities.add(name.lower())
                    out.entities.append(ExtractedEntity(name))
        cause = _cause(sentence, previous)
        if cause is not None:
            out.causes.append(cause)
        previous = _clause(sentence)
    return out


def _entity_type(kind: str) -> str | None:
    return {"code": "Code", "service": "Service"}.get(kind)


def _event(sentence: str, masked: str, reference: datetime, names: tuple[str, ...]) -> ExtractedEvent | None:
    for ref in find_time_refs(masked):
        text = re.sub(r"['’]s\b", "", ref.text)
        try:
            span = parse_range(text, reference=reference)
        except (PolygError, ValueError, OverflowError):
            continue
        if span.start is None:
            continue
        return ExtractedEvent(_clip(sentence), span.start, ref.text, names)
    return None


def _fact(sentence: str) -> ExtractedFact | None:
    clause = _clause(sentence)
    match = _FACT.match(clause)
    if match is None or _NEGATION.search(match.group("subject") + " " + match.group("verb")):
        return None
    subject = _ARTICLE.sub("", _phrase(match.group("subject")))
    obj = _ARTICLE.sub(
        "", _phrase(re.split(r",| and | but | because | since | until | as of ", match.group("object"))[0])
    )
    if not subject or not obj or len(subject.split()) > 5 or len(obj.split()) > 8:
        return None
    if subject.lower() in {"it", "this", "that", "he", "she", "they", "we", "i", "you", "there"}:
        return None
    return ExtractedFact(subject, _PREDICATES[match.group("verb")], obj)


_PRONOUNS = frozenset({"it", "this", "that", "which"})
_ARTICLE = re.compile(r"^(?:the|a|an)\s+", re.IGNORECASE)


_DENIED_CUE = re.compile(
    r"(?:\bnot|\bnever|n['’]t|\bno longer)\s+(?:\w+\s+){0,2}?(?:cause|caused|causes|lead|led|leads|result|"
    r"resulted|trigger|triggered|because|due|owing|make|made|break|broke)\b",
    re.IGNORECASE,
)


def _cause(sentence: str, previous: str | None) -> ExtractedCause | None:
    clause = _clause(sentence)
    if _DENIED_CUE.search(clause):
        return None
    for pattern, _first, confidence in _CAUSE_FORMS:
        match = pattern.match(clause)
        if match is None:
            continue
        # "It led to faster reports": "it" is what the sentence before said.
        cause = _antecedent(_phrase(match.group("a")), previous)
        effect = _antecedent(_phrase(match.group("b")), previous)
        if not cause or not effect or cause.lower() == effect.lower():
            continue
        if _negated_link(clause, match):
            return None
        return ExtractedCause(cause, effect, confidence, _clip(sentence))
    return None


def _antecedent(phrase: str, previous: str | None) -> str:
    if phrase.lower() in _PRONOUNS:
        return previous or ""
    return phrase


def _negated_link(clause: str, match: re.Match[str]) -> bool:
    """The words between the two sides ("did not cause", "wasn't caused by", "not because of")
    or just before the cue deny the link."""
    between = clause[min(match.end("a"), match.end("b")) : max(match.start("a"), match.start("b"))]
    head = clause[: min(match.start("a"), match.start("b"))]
    tail_of_first = clause[max(0, min(match.end("a"), match.end("b")) - 12) : min(match.end("a"), match.end("b"))]
    return bool(_NEGATION.search(between) or _NEGATION.search(head) or _NEGATION.search(tail_of_first))


def _clause(sentence: str) -> str:
    return sentence.strip().rstrip(".!?;:").strip()


def _phrase(text: str) -> str:
    cleaned = text.strip(" ,;:\"'“”")
    cleaned = re.sub(r"^(?:and|but|then|that|which|also)\s+", "", cleaned, flags=re.IGNORECASE)
    return _clip(cleaned)


def _clip(text: str) -> str:
    return text[:MAX_PHRASE_CHARS].strip()


# --- with an LLM ----------------------------------------------------------------------------------

EXTRACTION_MAX_TOKENS = 1000
EXTRACTION_PROMPT = """Extract structured memory from the text below for a multi-graph memory system.

Return JSON with:
- entities: named things (people, systems, projects, places, code identifiers) as written
- events: things that happened at a stated time, with occurred_at as ISO 8601 (the current time is {reference})
- facts: subject, predicate (snake_case, e.g. works_on), object
- causal_links: cause, effect, confidence (0-1); only links the text states, never denied ones

Text:
{content}"""


class LLMEntity(BaseModel):
    name: str = Field(min_length=1, max_length=200)
    type: str | None = Field(default=None, max_length=100)


class LLMEvent(BaseModel):
    description: str = Field(min_length=1, max_length=MAX_PHRASE_CHARS * 4)
    occurred_at: str = Field(min_length=1, max_length=100)


class LLMFact(BaseModel):
    subject: str = Field(min_length=1, max_length=200)
    predicate: str = Field(min_length=1, max_length=100)
    object: str = Field(min_length=1, max_length=200)


class LLMCause(BaseModel):
    cause: str = Field(min_length=1, max_length=MAX_PHRASE_CHARS)
    effect: str = Field(min_length=1, max_length=MAX_PHRASE_CHARS)
    confidence: float = Field(default=0.8, ge=0.0, le=1.0)


class LLMExtraction(BaseModel):
    entities: list[LLMEntity] = Field(default_factory=list, max_length=100)
    events: list[LLMEvent] = Field(default_factory=list, max_length=50)
    facts: list[LLMFact] = Field(default_factory=list, max_length=50)
    causal_links: list[LLMCause] = Field(default_factory=list, max_length=50)


def checked(content: str, proposed: LLMExtraction, reference: datetime) -> Extraction:
    """The model's extraction, keeping only what the text supports: names that occur in it,
    events whose time reads as a time, facts whose subject occurs in it; a link's evidence is
    the sentence that holds its cause or effect."""
    lowered = content.lower()
    out = Extraction()
    seen: set[str] = set()
    for entity in proposed.entities:
        name = entity.name.strip()
        if name and name.lower() in lowered and name.lower() not in seen:
            seen.add(name.lower())
            out.entities.append(ExtractedEntity(name, entity.type))
    for event in proposed.events:
        try:
            at = parse_instant(event.occurred_at, reference=reference)
        except (PolygError, ValueError, OverflowError):
            continue
        out.events.append(ExtractedEvent(_clip(event.description), at, event.occurred_at))
    for fact in proposed.facts:
        if fact.subject.strip().lower() in lowered:
            predicate = "_".join(re.findall(r"\w+", fact.predicate.lower()))
            out.facts.append(ExtractedFact(fact.subject.strip(), predicate, fact.object.strip()))
    in_content = sentences.split(content)
    for link in proposed.causal_links:
        if link.cause.strip().lower() == link.effect.strip().lower():
            continue
        source = next(
            (s for s in in_content if link.cause.lower() in s.lower() or link.effect.lower() in s.lower()), content
        )
        out.causes.append(ExtractedCause(_clip(link.cause), _clip(link.effect), link.confidence, _clip(source)))
    return out


class MemoryExtractor:
    """Rules, or an LLM whose extraction is checked against the text (`llm` None: rules)."""

    def __init__(self, llm: LLM | None = None, *, timeout_s: float | None = None) -> None:
        self.llm = llm
        self._call = with_fallback(
            self._llm_extract if llm is not None else None, extract, name="remember extraction", timeout_s=timeout_s
        )

    async def extract(self, content: str, reference: datetime, known_names: tuple[str, ...] = ()) -> Answer[Extraction]:
        return await self._call.run(content, reference, known_names)

    async def _llm_extract(self, content: str, reference: datetime, known_names: tuple[str, ...] = ()) -> Extraction:
        assert self.llm is not None
        prompt = EXTRACTION_PROMPT.replace("{reference}", reference.isoformat()).replace("{content}", content)
        messages: list[Message] = [{"role": "user", "content": prompt}]
        proposed = await self.llm.complete_json(messages, LLMExtraction, max_tokens=EXTRACTION_MAX_TOKENS)
        return checked(content, proposed, reference)
