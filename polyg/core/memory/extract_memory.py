"""What `remember` extracts from a memory: entities, events (statements with a time, resolved
against the reference time), facts (subject-predicate-object, with the validity the sentence
states) and causal links.

The rules read the memory's dependency parse (polyg.core.memory.extract_rules, over the process's English
pipeline). They stay conservative: an item is extracted only when the parse says so, because a
wrong link in the graph costs more than a missing one (the memory itself is always stored and
searchable). A negated statement ("X did not cause Y", "Alice no longer works on Z") adds nothing.
With an LLM configured, its extraction is used once checked against the text (names must
occur in it, times must read as times); any failure leaves the rules' extraction.
"""

from __future__ import annotations

import re
from datetime import datetime

from pydantic import BaseModel, Field

from polyg.core.memory import extract_rules as nlp_extract
from polyg.core.memory.extraction import ExtractedCause, ExtractedEntity, ExtractedEvent, ExtractedFact, Extraction
from polyg.core.text import sentences
from polyg.core.text.time import parse_instant
from polyg.errors import PolygError
from polyg.llm import LLM, Answer, Message, with_fallback
from polyg.nlp.pipeline import pipeline

__all__ = [
    "ExtractedCause",
    "ExtractedEntity",
    "ExtractedEvent",
    "ExtractedFact",
    "Extraction",
    "MemoryExtractor",
    "extract",
    "extract_async",
]

MAX_PHRASE_CHARS = nlp_extract.MAX_PHRASE_CHARS


def extract(
    content: str, reference: datetime, known_names: tuple[str, ...] = (), speaker: str | None = None
) -> Extraction:
    """Entities, events, facts and causal links of `content` (see the module docstring), said
    at `reference` by `speaker` (whom "I" names); `known_names`: names the graph knows that
    the content mentions (each is an entity where a sentence names it). Parses in this thread:
    on the event loop, parse first with `pipeline().parse_async` (the parse is kept)."""
    return nlp_extract.extract(content, reference, speaker, known_names)


async def extract_async(
    content: str, reference: datetime, known_names: tuple[str, ...] = (), speaker: str | None = None
) -> Extraction:
    """`extract`, its parse run off the event loop."""
    await pipeline().parse_async(content)
    return extract(content, reference, known_names, speaker)


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
            self._llm_extract if llm is not None else None,
            extract_async,
            name="remember extraction",
            timeout_s=timeout_s,
        )

    async def extract(
        self, content: str, reference: datetime, known_names: tuple[str, ...] = (), speaker: str | None = None
    ) -> Answer[Extraction]:
        return await self._call.run(content, reference, known_names, speaker)

    async def _llm_extract(
        self, content: str, reference: datetime, known_names: tuple[str, ...] = (), speaker: str | None = None
    ) -> Extraction:
        assert self.llm is not None
        prompt = EXTRACTION_PROMPT.replace("{reference}", reference.isoformat()).replace("{content}", content)
        messages: list[Message] = [{"role": "user", "content": prompt}]
        proposed = await self.llm.complete_json(messages, LLMExtraction, max_tokens=EXTRACTION_MAX_TOKENS)
        return checked(content, proposed, reference)
