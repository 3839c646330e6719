"""recall end to end over graphs given as plain async readers: the intents pick the graphs,
mentions get the graph's ids, an empty result falls back to the semantic graph, results are
bounded by max_results, and a failing name lookup or graph only narrows the answer."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime

import pytest

from polyg.core.recall.evidence import Evidence, GraphName
from polyg.core.recall.executor import Executor, GraphQuery
from polyg.core.recall.model import ClassifierOutput
from polyg.core.recall.service import RecallService
from polyg.core.recall.synthesiser import NOTHING_STORED
from polyg.core.text.time import FixedClock

pytestmark = pytest.mark.anyio
REF = datetime(2026, 1, 14, 12, 0, tzinfo=UTC)
MEMORIES = [f"Note {i} about caching and retries" for i in range(30)]
LINKS = [("missing AUTH_SECRET", "auth service crash", 0.9), ("deploy v2.3.1", "missing AUTH_SECRET", 0.8)]
IDS = {"auth service": "ent_auth"}


async def semantic(plan: ClassifierOutput, limit: int) -> list[Evidence]:
    words = set((plan.semantic_query or "").lower().split())
    hits = [(i, t) for i, t in enumerate(MEMORIES) if words & set(t.lower().split())]
    return [Evidence(f"mem_{i}", t, "semantic", "memory", 1 - i / 100) for i, t in hits[:limit]]


async def causal(plan: ClassifierOutput, limit: int) -> list[Evidence]:
    if not any(e.resolved == "ent_auth" for e in plan.entities):
        return []
    return [
        Evidence(f"link_{n}", f"{c} -> {e}", "causal", "cause", s, cause=c, effect=e, depth=n + 1)
        for n, (c, e, s) in enumerate(LINKS)
    ]


async def entity(plan: ClassifierOutput, limit: int) -> list[Evidence]:
    return [Evidence(m.resolved, m.mention, "entity", "entity", 1.0) for m in plan.entities if m.resolved]


async def resolve(mention: str) -> str | None:
    return IDS.get(mention.lower())


async def known(query: str) -> Sequence[str]:
    return [name for name in IDS if name in query.lower()]


def service(**graphs: GraphQuery) -> RecallService:
    readers: dict[GraphName, GraphQuery] = {"semantic": semantic, "causal": causal, "entity": entity}
    readers.update(graphs)  # type: ignore[arg-type]
    return RecallService(Executor(readers, timeout_ms=1000), resolve=resolve, known_names=known, clock=FixedClock(REF))


async def test_causal_question_resolves_the_mention_and_explains() -> None:
    result = await service().recall("Why did the auth service crash?")
    assert [e.resolved for e in result.classification.entities] == ["ent_auth"]
    assert result.output.answer.startswith("Auth service crash because missing AUTH_SECRET, because deploy v2.3.1.")
    assert result.output.sources == ["causal", "entity"]
    assert [e.id for e in result.evidence][:1] == ["ent_auth"]
    assert (result.classified_by, result.synthesised_by) == ("rules", "rules")


async def test_graphs_that_hold_nothing_fall_back_to_the_semantic_graph() -> None:
    result = await service().recall("Why do retries pile up?")
    assert result.classification.intents == ["causal"]
    assert result.output.sources == ["semantic"]
    assert "Note 0 about caching and retries" in result.output.answer


async def test_max_results_bounds_the_evidence() -> None:
    result = await service().recall("What do we know about caching?", max_results=5)
    assert [e.id for e in result.evidence] == [f"mem_{i}" for i in range(5)]
    assert result.truncated is False  # the reader itself was asked for 5
    big = await service().recall("What do we know about caching?", max_results=100)
    assert len(big.evidence) == 30


async def test_a_failing_lookup_and_graph_narrow_the_answer_only() -> None:
    async def broken(plan: ClassifierOutput, limit: int) -> list[Evidence]:
        raise ConnectionError("store gone")

    async def bad_known(query: str) -> Sequence[str]:
        raise ConnectionError("store gone")

    svc = service(causal=broken)
    svc.known_names = bad_known
    result = await svc.recall("Why did the auth service crash?")
    assert result.failed == {"causal": "ConnectionError: store gone"}
    assert "the causal graph failed" in result.output.answer
    assert result.output.sources == ["entity"]


async def test_an_empty_store_answers_nothing_stored() -> None:
    async def empty(plan: ClassifierOutput, limit: int) -> list[Evidence]:
        return []

    result = await service(semantic=empty, causal=empty, entity=empty).recall("What happened with the billing job?")
    assert result.output.answer == NOTHING_STORED
    assert result.output.confidence == 0.0
    assert result.evidence == []
