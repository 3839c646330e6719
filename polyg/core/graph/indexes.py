"""Whether a project's search indexes answer: the one guard for every full-text or vector read.

After a restart FalkorDB rebuilds its indexes in the background; meanwhile vector queries fail
and full-text queries find nothing, which would read as "no match" (a search that misses, a
duplicate check that lets the same memory in twice). Indexes just created (a project's first
write) are built in the background too, within milliseconds: a read waits up to `WAIT_S` for
them before refusing.

Writes are held back while any index of the graph is being built (`writable`): FalkorDB makes
a write wait for the end of a build (about a minute for the last third of 30k vectors here),
and every read of the graph that arrives after it then waits behind it, so one write sent
during a build made searches time out too. Refused before it is sent, the write changes
nothing and says how far the build is; reads meanwhile answer (search by words, degraded).
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass

from polyg.core.graph.embeddable import REGISTRY
from polyg.errors import IndexBuilding, IndexNotFound
from polyg.store.connection import reads_from_primary
from polyg.store.queries import Runner
from polyg.store.queries import indexes as q

WAIT_S = 1.0
OPERATIONAL = "OPERATIONAL"
# "[Indexing] 20001/30002: UNDER CONSTRUCTION": nodes indexed so far, of the label's nodes.
_PROGRESS = re.compile(r"(\d+)\s*/\s*(\d+)")


# The projects seen writable during the current tool call (None: outside one, check every time).
_CHECKED: ContextVar[set[str] | None] = ContextVar("polyg_writable_checked", default=None)


@contextlib.contextmanager
def one_check_per_call() -> Iterator[None]:
    """Within it (one tool call, and the tasks it starts), a project's indexes are checked
    before its first write only: a build begun during the call is met by the next call."""
    token = _CHECKED.set(set())
    try:
        yield
    finally:
        _CHECKED.reset(token)


@dataclass(frozen=True)
class Build:
    """An index being built, as FalkorDB reports it in db.indexes()."""

    label: str
    done: int | None
    total: int | None

    @classmethod
    def of(cls, label: str, status: str) -> Build:
        found = _PROGRESS.search(status)
        if found is None:
            return cls(label, None, None)
        return cls(label, int(found[1]), int(found[2]))

    def describe(self) -> str:
        if self.done is None or not self.total:
            return f"{self.label} (progress unknown)"
        percent = min(100, 100 * self.done // self.total)
        return f"{self.label} ({percent}% done, {self.done:,} of {self.total:,} nodes)"


def builds(rows: Sequence[Sequence[object]], labels: frozenset[str] | None = None) -> list[Build]:
    """The indexes of `rows` (label, status) not yet operational, of `labels` if given, one per
    label (the least advanced)."""
    found: dict[str, Build] = {}
    for label, status in rows:
        if status == OPERATIONAL or (labels is not None and label not in labels):
            continue
        build = Build.of(str(label), str(status))
        known = found.get(build.label)
        if known is None or (build.done or 0) < (known.done or 0):
            found[build.label] = build
    return [found[label] for label in sorted(found)]


class IndexReadiness:
    def __init__(self, runner: Runner) -> None:
        self.runner = runner
        # Projects whose search indexes were seen operational (they stay so until the database
        # restarts: `forget_all`).
        self._ready: set[str] = set()

    def forget_all(self) -> None:
        """The database restarted (it rebuilds its indexes) or was replaced: check again."""
        self._ready.clear()

    def forget(self, project: str) -> None:
        """The project's graph was cleared, or a read found an index missing: check again."""
        self._ready.discard(project)

    async def writable(self, project: str) -> None:
        """Return when no index of the project is being built (waiting up to `WAIT_S` for
        indexes just created); else refuse the write, before it is sent, with IndexBuilding
        (2005, retryable) naming the build and its progress.

        Checked before every write, but once per tool call (`one_check_per_call`): a build can
        begin at any time, by another process (a loader creating its indexes after the rows), so
        a project seen writable once is not writable for good; db.indexes() costs about a round
        trip."""
        checked = _CHECKED.get()
        if checked is not None and project in checked:
            return
        deadline = time.monotonic() + WAIT_S
        while True:
            # The primary's state: a replica's indexes say nothing of where the write goes.
            with reads_from_primary():
                rows = await q.index_states(self.runner, project)
            building = builds(rows)
            if not building or time.monotonic() >= deadline:
                break
            await asyncio.sleep(0.05)
        if building:
            raise IndexBuilding(
                f"Project {project!r}: FalkorDB is building its index on "
                f"{', '.join(b.describe() for b in building)}, and would hold this write (and the reads "
                "after it) until the build ends. Nothing was written: try again in a moment; searches "
                "answer meanwhile, by words.",
                details={
                    "retryable": True,
                    "building": [{"label": b.label, "done": b.done, "total": b.total} for b in building],
                },
            )
        if checked is not None:
            checked.add(project)

    async def check(self, project: str) -> None:
        """Return once the project's search indexes answer; refuse, clearly, while FalkorDB
        rebuilds them (IndexNotFound). A project with no indexes yet (never written) simply has
        nothing to find."""
        if project in self._ready:
            return
        deadline = time.monotonic() + WAIT_S
        labels = frozenset(REGISTRY.search_labels())
        while True:
            rows = await q.index_states(self.runner, project)
            building = builds(rows, labels)
            if not building or time.monotonic() >= deadline:
                break
            await asyncio.sleep(0.05)
        if building:
            raise IndexNotFound(
                f"The search indexes of project {project!r} are being rebuilt: "
                f"{', '.join(b.describe() for b in building)}; search and remember are back in a moment "
                "(about a minute per 100k vectors)."
            )
        if rows:
            self._ready.add(project)
