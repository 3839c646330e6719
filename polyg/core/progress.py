"""Progress of a long operation, told to whoever asked to hear it.

The core reports through a `Progress` callback (done so far, total when known, a short
message). The MCP server binds its session's for the duration of each tool call (`bound`),
which sends notifications only when the client's request carried a `progressToken`; a tool
that runs long passes `current()` on to the core. Outside a tool call `current()` is None.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Awaitable, Callable, Iterator

Progress = Callable[[float, float | None, str | None], Awaitable[None]]

_current: contextvars.ContextVar[Progress | None] = contextvars.ContextVar("polyg_progress", default=None)


def current() -> Progress | None:
    """The progress callback of the tool call running, if its client asked for progress."""
    return _current.get()


@contextlib.contextmanager
def bound(progress: Progress | None) -> Iterator[None]:
    """`progress` is `current()` within the block."""
    token = _current.set(progress)
    try:
        yield
    finally:
        _current.reset(token)
