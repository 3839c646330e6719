"""The classifier's output (spec 003's ClassifierOutput), shared by the rules, the LLM path and
the executor."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field

from polyg.core.text.timeref import Timeframe

Intent = Literal["semantic", "temporal", "causal", "entity"]
Direction = Literal["upstream", "downstream", "both"]
INTENT_ORDER: tuple[Intent, ...] = ("causal", "temporal", "entity", "semantic")


class EntityMention(BaseModel):
    mention: str = Field(min_length=1, max_length=200)
    type: str | None = None
    # The id of the stored entity the mention names, when the graph knows it.
    resolved: str | None = None


class ClassifierOutput(BaseModel):
    intents: list[Intent] = Field(min_length=1)
    entities: list[EntityMention] = Field(default_factory=list)
    timeframe: Timeframe | None = None
    causal_direction: Direction | None = None
    semantic_query: str | None = None
    confidence: float = Field(ge=0.0, le=1.0)


def ordered(intents: set[Intent] | list[Intent]) -> list[Intent]:
    present = set(intents)
    return [intent for intent in INTENT_ORDER if intent in present]
