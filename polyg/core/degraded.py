"""Search that degrades instead of failing: why a call answered with less than it could.

While FalkorDB builds a vector index (minutes for 100k vectors after a restart), and whenever
the embedder fails (a remote embeddings endpoint that is down), a search cannot rank by
meaning; it still can by words and by the graph. The search service (polyg.core.search) then
answers without the vector side and notes why here; the MCP layer (polyg.server) puts the note
in the result's `degraded` field of the tools whose output declares one. One collector per tool
call, carried by a context variable, so that the tasks a call gathers note into it too. Where
nothing collects (`polyg query` on the command line, spec 001's error 3001), the search fails
as before: an answer with less in it must say so.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from contextvars import ContextVar

log = logging.getLogger(__name__)

VECTOR_INDEX_BUILDING = "vector index building"

_notes: ContextVar[list[str] | None] = ContextVar("polyg_degraded", default=None)


def note(reason: str) -> bool:
    """Record that the current call answers without something, and why (once per reason).
    False when nobody collects (a command-line query, a call from inside the core): the caller
    then fails as it would have, since a degraded answer must say that it is one."""
    notes = _notes.get()
    if notes is None:
        return False
    if reason not in notes:
        notes.append(reason)
        log.info("search degraded", extra={"reason": reason})
    return True


def embedder_failed(message: str) -> str:
    return f"embedder failed: {message}"


@contextlib.contextmanager
def collecting() -> Iterator[list[str]]:
    """The notes of the calls made inside the block (empty when nothing degraded)."""
    notes: list[str] = []
    token = _notes.set(notes)
    try:
        yield notes
    finally:
        _notes.reset(token)


def reason(notes: list[str]) -> str | None:
    return "; ".join(notes) or None
