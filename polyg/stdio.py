"""stdio transport: the protocol owns stdout; the store opens in the background."""

from __future__ import annotations

import asyncio
import logging
import os

from mcp.server.stdio import stdio_server

from polyg.core.app import Polyg
from polyg.server import build_server


async def serve_stdio(core: Polyg) -> None:
    server, _ = build_server(core)
    core.start()
    try:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
    except (asyncio.CancelledError, KeyboardInterrupt):
        # Stopped by a signal: the thread reading stdin is blocked in read() and would keep
        # the interpreter alive until the client closes the pipe. Clean up, then leave.
        await core.close()
        logging.shutdown()
        os._exit(0)
    await core.close()
