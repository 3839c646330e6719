"""Timing calls: one call, a series of calls into a list of durations, calls run `width` at a time."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import Any


@contextlib.contextmanager
def timing(durations: list[float]) -> Iterator[None]:
    """Appends the seconds the `with` block took to `durations` (when it did not raise)."""
    t = time.perf_counter()
    yield
    durations.append(time.perf_counter() - t)


async def timed(fn: Callable[[], Awaitable[Any]]) -> float:
    t = time.perf_counter()
    await fn()
    return time.perf_counter() - t


async def bounded(calls: Sequence[Callable[[], Awaitable[Any]]], width: int) -> list[Any]:
    """Run `calls` with at most `width` in flight; their results in order."""
    gate = asyncio.Semaphore(width)

    async def one(call: Callable[[], Awaitable[Any]]) -> Any:
        async with gate:
            return await call()

    return list(await asyncio.gather(*(one(call) for call in calls)))
