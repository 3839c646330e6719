"""What a graph returns to recall: pieces of evidence, each a stored node (or link) with its
id and text, so every sentence of an answer can be traced to stored memories."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

GraphName = Literal["semantic", "temporal", "causal", "entity"]
Kind = Literal["memory", "event", "fact", "cause", "entity", "concept"]


@dataclass(frozen=True)
class Evidence:
    id: str
    text: str
    graph: GraphName
    kind: Kind
    # How strongly the graph ties this to the query, 0..1 (search score, path confidence...).
    score: float
    at: str | None = None  # when it happened (events), or since when it holds (facts)
    # Causal links: the two ends and how many hops from the asked-about node.
    cause: str | None = None
    effect: str | None = None
    depth: int = 0
    # Facts: the statement's parts and the end of its validity (None: still holds).
    subject: str | None = None
    predicate: str | None = None
    object: str | None = None
    valid_to: str | None = None
    # Names of things next to this node in the graph, for follow-up questions.
    neighbours: tuple[str, ...] = ()
    # The stored memories (remember) it comes from: a memory itself, or those an extracted
    # event, fact or causal link cites; so every piece of evidence can be traced to what was said.
    memories: tuple[str, ...] = ()


def best_first(items: list[Evidence]) -> list[Evidence]:
    """Evidence ordered by score, each id once (the highest-scoring copy kept)."""
    kept: dict[str, Evidence] = {}
    for item in items:
        if item.id not in kept or item.score > kept[item.id].score:
            kept[item.id] = item
    return sorted(kept.values(), key=lambda e: (-e.score, e.id))
