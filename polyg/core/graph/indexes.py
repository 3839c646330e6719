"""Whether a project's search indexes answer: the one guard for every full-text or vector read.

After a restart FalkorDB rebuilds its indexes in the background; meanwhile vector queries fail
and full-text queries find nothing, which would read as "no match" (a search that misses, a
duplicate check that lets the same memory in twice). Indexes just created (a project's first
write) are built in the background too, within milliseconds: a read waits up to `WAIT_S` for
them before refusing.
"""

from __future__ import annotations

import asyncio
import time

from polyg.core.graph.embeddable import REGISTRY
from polyg.errors import IndexNotFound
from polyg.store.queries import Runner
from polyg.store.queries import indexes as q

WAIT_S = 1.0


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

    async def check(self, project: str) -> None:
        """Return once the project's search indexes answer; refuse, clearly, while FalkorDB
        rebuilds them (IndexNotFound). A project with no indexes yet (never written) simply has
        nothing to find."""
        if project in self._ready:
            return
        deadline = time.monotonic() + WAIT_S
        labels = REGISTRY.search_labels()
        while True:
            rows = await q.index_states(self.runner, project)
            building = sorted({label for label, status in rows if label in labels and status != "OPERATIONAL"})
            if not building or time.monotonic() >= deadline:
                break
            await asyncio.sleep(0.05)
        if building:
            raise IndexNotFound(
                f"The search indexes of project {project!r} ({', '.join(building)}) are being rebuilt after "
                "the database started; search and remember are back in a moment (about a minute per 100k "
                "vectors)."
            )
        if rows:
            self._ready.add(project)
