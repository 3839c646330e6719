"""The parallel executor: only the graphs the intents need, at once, each under its own time
limit; a failing or slow graph is reported and never fails the others."""

from __future__ import annotations

import asyncio

import pytest

from polyg.core.recall.evidence import Evidence, GraphName
from polyg.core.recall.executor import Executor, GraphQuery
from polyg.core.recall.model import ClassifierOutput

pytestmark = pytest.mark.anyio


def plan(*intents: str) -> ClassifierOutput:
    return ClassifierOutput.model_validate({"intents": list(intents), "confidence": 0.9, "semantic_query": "q"})


def answering(graph: GraphName, calls: list[str], started: asyncio.Event | None = None) -> GraphQuery:
    async def query(p: ClassifierOutput, limit: int) -> list[Evidence]:
        calls.append(graph)
        return [Evidence(f"{graph}-{i}", f"{graph} item {i}", graph, "memory", 1 - i / 10) for i in range(limit)]

    return query


async def test_only_the_graphs_of_the_intents_are_queried() -> None:
    calls: list[str] = []
    graphs: dict[GraphName, GraphQuery] = {g: answering(g, calls) for g in ("semantic", "temporal", "causal", "entity")}
    out = await Executor(graphs).run(plan("causal", "temporal"), limit=2)
    assert sorted(calls) == ["causal", "temporal"]
    assert sorted(out.results) == ["causal", "temporal"]
    assert [e.id for e in out.results["causal"]] == ["causal-0", "causal-1"]
    assert out.missing == []


async def test_graphs_run_concurrently() -> None:
    # Each graph waits until both have started: run one after the other, they would deadlock
    # and the time limit would report both as timed out.
    both = asyncio.Barrier(2)

    def waiting(graph: GraphName) -> GraphQuery:
        async def query(p: ClassifierOutput, limit: int) -> list[Evidence]:
            await both.wait()
            return [Evidence(graph, graph, graph, "memory", 1.0)]

        return query

    out = await Executor({"semantic": waiting("semantic"), "entity": waiting("entity")}, timeout_ms=2000).run(
        plan("semantic", "entity"), limit=5
    )
    assert sorted(out.results) == ["entity", "semantic"]
    assert out.timed_out == []


async def test_a_failing_graph_is_reported_and_the_others_answer() -> None:
    calls: list[str] = []

    async def broken(p: ClassifierOutput, limit: int) -> list[Evidence]:
        raise RuntimeError("store connection lost")

    out = await Executor({"semantic": answering("semantic", calls), "causal": broken}).run(
        plan("semantic", "causal"), limit=1
    )
    assert list(out.results) == ["semantic"]
    assert out.failed == {"causal": "RuntimeError: store connection lost"}
    assert out.missing == ["causal"]


async def test_a_slow_graph_times_out_alone() -> None:
    calls: list[str] = []
    never = asyncio.Event()

    async def stuck(p: ClassifierOutput, limit: int) -> list[Evidence]:
        await never.wait()
        return []

    out = await Executor({"temporal": stuck, "entity": answering("entity", calls)}, timeout_ms=50).run(
        plan("temporal", "entity"), limit=1
    )
    assert out.timed_out == ["temporal"]
    assert [e.id for e in out.results["entity"]] == ["entity-0"]
    assert set(out.elapsed_ms) == {"temporal", "entity"}


async def test_only_overrides_the_intents_and_unknown_graphs_are_skipped() -> None:
    calls: list[str] = []
    out = await Executor({"semantic": answering("semantic", calls)}).run(plan("causal"), limit=1, only=("semantic",))
    assert calls == ["semantic"]
    out = await Executor({"semantic": answering("semantic", calls)}).run(plan("causal"), limit=1)
    assert out.results == {} and out.missing == []
