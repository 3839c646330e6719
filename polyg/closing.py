"""Closing the core to the end, whatever interrupts the task that closes it."""

from __future__ import annotations

import asyncio

from polyg.runtime.app import Polyg


async def close_fully(core: Polyg) -> None:
    """`core.close()`, run to its end even when the calling task is cancelled meanwhile.

    Ctrl-C makes asyncio cancel the main task, and uvicorn passes the SIGINT it caught on only
    after it stopped serving, just as polyg starts closing: a cancelled close leaves the
    embedded database running. The close runs in its own task; a cancellation of the caller
    is raised again once the close is done (asyncio then ends the run as for Ctrl-C).
    """
    closing = asyncio.ensure_future(core.close())
    cancelled = False
    while True:
        try:
            await asyncio.shield(closing)
            break
        except asyncio.CancelledError:
            if closing.done():
                break
            cancelled = True
    if cancelled:
        raise asyncio.CancelledError
    closing.result()
