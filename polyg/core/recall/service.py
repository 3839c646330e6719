"""recall end to end: classify the query, resolve the things it names against the graph, query
the graphs its intents need at once, and synthesise an answer from what they return.

When every graph the intents chose comes back empty, the semantic graph is asked as well (if
it was not already): a question phrased as "why" about something stored only as a plain memory
still finds that memory, and the answer says what it is based on.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Literal, Protocol

from polyg.core import limits
from polyg.core.recall.classifier import Classifier, MentionResolver, resolve_mentions, rule_semantic_query
from polyg.core.recall.evidence import Evidence, GraphName, best_first
from polyg.core.recall.executor import Execution, Executor
from polyg.core.recall.model import ClassifierOutput
from polyg.core.recall.output import SynthesizerOutput
from polyg.core.recall.synthesiser import Synthesiser, usable
from polyg.core.text.time import SYSTEM_CLOCK, Clock

log = logging.getLogger("polyg.recall")

DEFAULT_MAX_RESULTS = limits.DEFAULT_RECALL_RESULTS
MAX_RESULTS = limits.MAX_RECALL_RESULTS
# Names the graph knows that occur in the query, found before classifying (lower-case mentions
# such as "pepper" are names only because the graph says so).
KnownNames = Callable[[str], Awaitable[Sequence[str]]]


class Readahead(Protocol):
    """Reads a recall can start before the step that needs them, to overlap with the steps
    before it; each must give what the reader would have read itself."""

    def anticipate(self, semantic_query: str) -> None:
        """The query the rules will form is known: before its names are looked up."""

    def prepare(self, plan: ClassifierOutput, limit: int) -> None:
        """The query is classified: before its names are resolved."""

    def release(self) -> None:
        """The recall is done: what was started and not used may stop."""


@dataclass
class RecallResult:
    output: SynthesizerOutput
    evidence: list[Evidence]
    classification: ClassifierOutput
    failed: dict[GraphName, str] = field(default_factory=dict)
    timed_out: list[GraphName] = field(default_factory=list)
    classified_by: Literal["llm", "rules"] = "rules"
    synthesised_by: Literal["llm", "rules"] = "rules"
    # More evidence was found than max_results lets through.
    truncated: bool = False


class RecallService:
    def __init__(
        self,
        executor: Executor,
        *,
        classifier: Classifier | None = None,
        synthesiser: Synthesiser | None = None,
        resolve: MentionResolver | None = None,
        known_names: KnownNames | None = None,
        readahead: Readahead | None = None,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.executor = executor
        self.classifier = classifier or Classifier(clock=clock)
        self.synthesiser = synthesiser or Synthesiser()
        self.resolve = resolve
        self.known_names = known_names
        self.readahead = readahead
        self.clock = clock

    async def recall(
        self, query: str, *, max_results: int = DEFAULT_MAX_RESULTS, reference: datetime | None = None
    ) -> RecallResult:
        try:
            return await self._recall(query, max(1, min(max_results, MAX_RESULTS)), reference or self.clock.now())
        finally:
            if self.readahead is not None:
                self.readahead.release()

    async def _recall(self, query: str, limit: int, at: datetime) -> RecallResult:
        if self.readahead is not None and self.classifier.llm is None:  # an LLM may form another query
            self.readahead.anticipate(rule_semantic_query(query))
        known = await self._guarded(self.known_names(query), ()) if self.known_names else ()
        classified = await self.classifier.classify(query, reference=at, known_names=known)
        plan = classified.value
        if self.readahead is not None:
            self.readahead.prepare(plan, limit)
        if self.resolve is not None and plan.entities:
            plan = await self._guarded(resolve_mentions(plan, self.resolve), plan)
        execution = await self.executor.run(plan, limit)
        if not execution.evidence() and "semantic" not in plan.intents and "semantic" in self.executor.graphs:
            extra = await self.executor.run(plan, limit, only=("semantic",))
            execution = _combined(execution, extra)
        synthesised = await self.synthesiser.synthesise(query, plan, execution, at)
        ranked = [e for e in best_first(execution.evidence()) if usable(e)]
        return RecallResult(
            output=synthesised.value,
            evidence=ranked[:limit],
            classification=plan,
            failed=dict(execution.failed),
            timed_out=list(execution.timed_out),
            classified_by=classified.source,
            synthesised_by=synthesised.source,
            truncated=len(ranked) > limit,
        )

    async def _guarded[T](self, work: Awaitable[T], default: T) -> T:
        """Name lookups help the classifier but are not worth failing a recall over."""
        try:
            async with asyncio.timeout(self.executor.timeout_ms / 1000):
                return await work
        except Exception as exc:  # a lookup's failure leaves the mentions unresolved
            log.warning("recall: name lookup failed: %s: %s", type(exc).__name__, exc)
            return default


def _combined(first: Execution, second: Execution) -> Execution:
    return Execution(
        results={**first.results, **second.results},
        failed={**first.failed, **second.failed},
        timed_out=[*first.timed_out, *second.timed_out],
        elapsed_ms={**first.elapsed_ms, **second.elapsed_ms},
    )
