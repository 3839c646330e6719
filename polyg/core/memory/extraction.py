"""What `remember` extracts from a memory: entities, events, facts and causal links (the types
the rules over the parse (polyg.core.memory.extract_rules) and a checked LLM extraction both produce)."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime


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
    # The validity the sentence states ("since June 2025", "from January 2024 until May 2025");
    # None: from when it was said, open-ended.
    valid_from: datetime | None = None
    valid_to: datetime | None = None
    # The sentence says the fact stopped holding at `valid_to` ("X left Y", "X replaced Y as
    # lead of Z" for Y, "no longer works on"): the write closes the fact that held then, and
    # adds none.
    ends: bool = False


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
