"""The memory toolset's causal graph: `add_causal_link`, `get_causal_chain` and `explain_why`."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, Field

from polyg.core import limits
from polyg.runtime.app import Services
from polyg.tools import shaping
from polyg.tools.memory.shared import Direction, memory
from polyg.tools.registry import Params

# --- result shapes ---------------------------------------------------------------------

if TYPE_CHECKING:  # annotations only: the memory graphs' modules load when the services are made
    from polyg.core.memory.causal import CausalNode, Chain, Explanation


class NodeOut(BaseModel):
    id: str
    kind: Literal["event", "entity"]
    text: str
    occurred_at: str | None = None
    type: str | None = None


class CausalLinkOut(BaseModel):
    id: str
    cause_id: str
    effect_id: str
    confidence: float
    evidence: str


class AddCausalLinkResult(BaseModel):
    link: CausalLinkOut
    cause: NodeOut
    effect: NodeOut
    resolved: dict[str, str]
    scores: dict[str, float] = Field(default={}, description="How well each end matched (1.0: exactly).")
    updated: bool


class ChainNodeOut(NodeOut):
    distance: int
    confidence: float
    direction: str
    via: str | None = None


class MatchOut(BaseModel):
    """How the event asked about was found: by id, exactly, ..., or as a natural phrasing of a
    stored one (`search`), with the match's score (cosine similarity for fuzzy wording)."""

    how: str
    score: float


class CausalChainResult(BaseModel):
    start: NodeOut
    match: MatchOut | None = None
    direction: str
    depth: int
    nodes: list[ChainNodeOut]
    links: list[CausalLinkOut]
    cycles: list[str]
    truncated_by_depth: bool
    truncated_by_limit: bool
    omitted: int | None = None
    note: str | None = None


class StepOut(NodeOut):
    confidence: float | None = None
    evidence: str | None = None


class ExplanationOut(BaseModel):
    confidence: float
    chain: list[StepOut]


class ExplainResult(BaseModel):
    event: NodeOut
    match: MatchOut | None = None
    answer: str
    root_causes: list[NodeOut]
    explanations: list[ExplanationOut]
    cycles: list[str]
    truncated_by_depth: bool


# --- parameters ------------------------------------------------------------------------


class AddCausalLink(Params):
    cause: str = Field(description="Event or entity (text, name, id or a phrasing); made when nothing matches.")
    effect: str
    confidence: float = Field(default=1.0, ge=0.0, le=1.0)
    evidence: str = ""
    create_missing: bool = True


class GetCausalChain(Params):
    event: str = Field(description="Event or entity (text, name or id).")
    direction: Direction = "upstream"
    depth: int = Field(default=3, ge=1, le=10)
    min_confidence: float = Field(default=0.0, ge=0.0, le=1.0)
    limit: int = Field(default=200, ge=1, le=1000)


class ExplainWhy(Params):
    event: str
    depth: int = Field(default=5, ge=1, le=10)
    limit: int = Field(default=10, ge=1, le=100)


# --- shaping ---------------------------------------------------------------------------


def node_out(node: CausalNode) -> dict[str, Any]:
    return {"id": node.id, "kind": node.kind, "text": node.text, "occurred_at": node.occurred_at, "type": node.type}


def match_out(chain: Chain) -> dict[str, Any] | None:
    return {"how": chain.match.how, "score": chain.match.score} if chain.match is not None else None


def chain_out(chain: Chain, direction: str, depth: int) -> dict[str, Any]:
    return {
        "start": node_out(chain.start),
        "match": match_out(chain),
        "direction": direction,
        "depth": depth,
        "nodes": [
            {
                **node_out(n.node),
                "distance": n.distance,
                "confidence": n.confidence,
                "direction": n.direction,
                "via": n.via,
            }
            for n in chain.nodes
        ],
        "links": [
            {
                "id": link.id,
                "cause_id": link.cause_id,
                "effect_id": link.effect_id,
                "confidence": link.confidence,
                "evidence": link.evidence,
            }
            for link in chain.links
        ],
        "cycles": chain.cycles,
        "truncated_by_depth": chain.cut_by_depth,
        "truncated_by_limit": chain.cut_by_limit,
    }


def answer(event: CausalNode, explanations: list[Explanation]) -> str:
    """One sentence per explanation: "X because Y (0.95), which followed from Z (0.88)"."""
    if not explanations:
        return f"No causes of {event.text!r} are stored."
    sentences = []
    for explanation in explanations:
        causes = list(reversed(explanation.steps[:-1]))  # nearest cause first
        parts = [f"{causes[0].node.text} ({causes[0].confidence:g})"]
        parts += [f"which followed from {s.node.text} ({s.confidence:g})" for s in causes[1:]]
        sentences.append(f"{event.text} because {', '.join(parts)}; chain confidence {explanation.confidence:.4g}.")
    return " ".join(sentences)


# --- tools -----------------------------------------------------------------------------


@memory.tool(AddCausalLink, AddCausalLinkResult, idempotent=True, title="Add causal link")
async def add_causal_link(s: Services, p: AddCausalLink) -> AddCausalLinkResult:
    """Record that a cause led to an effect, with a confidence (0-1) and evidence.

    Each of cause and effect is matched to an event or entity (by id, exactly, in any case,
    fuzzily, then by meaning) or created as a new event. Stating a link again updates its
    confidence and adds new evidence to the evidence it had."""
    result = await s.memory.causal.add_link(
        s.project(p.project_id),
        cause=p.cause,
        effect=p.effect,
        confidence=p.confidence,
        evidence=p.evidence,
        create_missing=p.create_missing,
        described=True,
    )
    link = result.link
    return shaping.typed(
        AddCausalLinkResult,
        {
            "link": {
                "id": link.id,
                "cause_id": link.cause_id,
                "effect_id": link.effect_id,
                "confidence": link.confidence,
                "evidence": link.evidence,
            },
            "cause": node_out(result.cause),
            "effect": node_out(result.effect),
            "resolved": result.resolved,
            "scores": result.scores,
            "updated": result.updated,
        },
    )


@memory.tool(GetCausalChain, CausalChainResult, read_only=True, title="Get causal chain")
async def get_causal_chain(s: Services, p: GetCausalChain) -> CausalChainResult:
    """Causes (upstream), effects (downstream) or both of an event, up to `depth` links away.

    Each node's confidence is the product along its chain; cycles are reported, not followed."""
    chain = await s.memory.causal.chain(
        s.project(p.project_id),
        p.event,
        direction=p.direction,
        depth=p.depth,
        min_confidence=p.min_confidence,
        max_nodes=p.limit,
    )
    answer = chain_out(chain, p.direction, p.depth)
    _chain_within_budget(answer)
    return shaping.typed(CausalChainResult, answer)


def _chain_within_budget(chain: dict[str, Any]) -> None:
    """The nearest nodes that fit, then the links among them (at most half the room when the
    links are long), so that no link shown names a node left out."""
    nodes, links = chain["nodes"], chain["links"]
    room = limits.RESPONSE_BUDGET - shaping.MARGIN - limits.size({**chain, "nodes": [], "links": []})
    if limits.size(nodes) + limits.size(links) <= room:
        return
    shaping.keep_fitting(chain, "nodes", room=room - min(limits.size(links), room // 2))
    shown = {chain["start"]["id"], *(n["id"] for n in chain["nodes"])}
    chain["links"] = [x for x in links if x["cause_id"] in shown and x["effect_id"] in shown]
    shaping.keep_fitting(chain, "links", room=room - limits.size(chain["nodes"]))
    omitted = len(nodes) + len(links) - len(chain["nodes"]) - len(chain["links"])
    chain.update(truncated_by_limit=True, omitted=omitted)
    how = "ask for less depth, a higher min_confidence or a smaller limit."
    chain["note"] = shaping.left_out(len(chain["nodes"]), len(nodes), how)


@memory.tool(ExplainWhy, ExplainResult, read_only=True, title="Explain why")
async def explain_why(s: Services, p: ExplainWhy) -> ExplainResult:
    """Why an event happened: chains from its root causes, strongest first.

    Each chain comes with each link's confidence and evidence, the nodes' times, and the chain's
    confidence (their product)."""
    chain, explanations = await s.memory.causal.explain(s.project(p.project_id), p.event, depth=p.depth, limit=p.limit)
    return shaping.typed(
        ExplainResult,
        {
            "event": node_out(chain.start),
            "match": match_out(chain),
            "answer": answer(chain.start, explanations),
            "root_causes": [node_out(e.steps[0].node) for e in explanations],
            "explanations": [
                {
                    "confidence": e.confidence,
                    "chain": [
                        {**node_out(step.node), "confidence": step.confidence, "evidence": step.evidence}
                        for step in e.steps
                    ],
                }
                for e in explanations
            ],
            "cycles": chain.cycles,
            "truncated_by_depth": chain.cut_by_depth,
        },
    )
