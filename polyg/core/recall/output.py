"""The synthesiser's output (spec 003's SynthesizerOutput)."""

from __future__ import annotations

from pydantic import BaseModel, Field


class CausalStep(BaseModel):
    cause: str
    effect: str
    confidence: float | None = None
    evidence_id: str | None = None


class TimedEvent(BaseModel):
    id: str
    at: str
    description: str


class TemporalContext(BaseModel):
    start: str | None = None
    end: str | None = None
    events: list[TimedEvent] = Field(default_factory=list)


class EntityInvolved(BaseModel):
    id: str | None = None
    name: str
    type: str | None = None
    current_facts: list[str] = Field(default_factory=list)


class SemanticMatch(BaseModel):
    id: str
    text: str
    score: float


class Reasoning(BaseModel):
    causal_chain: list[CausalStep] = Field(default_factory=list)
    temporal_context: TemporalContext | None = None
    entities_involved: list[EntityInvolved] = Field(default_factory=list)
    semantic_matches: list[SemanticMatch] = Field(default_factory=list)


class SynthesizerOutput(BaseModel):
    answer: str
    confidence: float = Field(ge=0.0, le=1.0)
    reasoning: Reasoning = Field(default_factory=Reasoning)
    sources: list[str] = Field(default_factory=list)
    follow_ups: list[str] = Field(default_factory=list)
