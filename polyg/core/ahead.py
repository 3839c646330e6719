"""Reads started before the step that needs them, so they overlap with the steps before it."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable


def started[T](work: Awaitable[T]) -> asyncio.Future[T]:
    """`work` under way. Its failure is still raised to whoever awaits it; if nobody does (the
    step turned out not to need it), it is not reported as an exception never retrieved."""
    future = asyncio.ensure_future(work)
    future.add_done_callback(lambda done: done.cancelled() or done.exception())
    return future
