"""The parallel graph executor (spec 003): only the graphs a plan's intents need, queried
concurrently, each under its own time limit. A graph that fails or is slow never fails the
recall: its name is reported with what went wrong, and the others' evidence is used."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field

from polyg.core.recall.evidence import Evidence, GraphName
from polyg.core.recall.model import ClassifierOutput

log = logging.getLogger("polyg.recall")

DEFAULT_PARALLEL_TIMEOUT_MS = 5000

# One graph's read: the plan and how many items to return.
GraphQuery = Callable[[ClassifierOutput, int], Awaitable[list[Evidence]]]


@dataclass
class Execution:
    results: dict[GraphName, list[Evidence]] = field(default_factory=dict)
    failed: dict[GraphName, str] = field(default_factory=dict)
    timed_out: list[GraphName] = field(default_factory=list)
    elapsed_ms: dict[GraphName, float] = field(default_factory=dict)

    @property
    def missing(self) -> list[GraphName]:
        return [*self.failed, *self.timed_out]

    def evidence(self) -> list[Evidence]:
        return [item for items in self.results.values() for item in items]


class Executor:
    def __init__(
        self, graphs: Mapping[GraphName, GraphQuery], *, timeout_ms: int = DEFAULT_PARALLEL_TIMEOUT_MS
    ) -> None:
        self.graphs = dict(graphs)
        self.timeout_ms = timeout_ms

    async def run(self, plan: ClassifierOutput, limit: int, only: tuple[GraphName, ...] | None = None) -> Execution:
        """Query the graphs named by the plan's intents (or `only`) at once."""
        wanted = [g for g in (only if only is not None else plan.intents) if g in self.graphs]
        execution = Execution()
        await asyncio.gather(*(self._one(name, plan, limit, execution) for name in wanted))
        return execution

    async def _one(self, name: GraphName, plan: ClassifierOutput, limit: int, execution: Execution) -> None:
        started = time.perf_counter()
        try:
            async with asyncio.timeout(self.timeout_ms / 1000):
                execution.results[name] = await self.graphs[name](plan, limit)
        except TimeoutError:
            execution.timed_out.append(name)
            log.warning("recall: the %s graph gave no answer within %d ms", name, self.timeout_ms)
        except Exception as exc:  # one graph's failure must not fail the recall
            execution.failed[name] = f"{type(exc).__name__}: {exc}"[:300]
            log.warning("recall: the %s graph failed: %s", name, execution.failed[name])
        finally:
            execution.elapsed_ms[name] = round((time.perf_counter() - started) * 1000, 2)
