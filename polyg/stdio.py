"""stdio transport: the protocol owns stdout; the store opens in the background."""

from __future__ import annotations

from mcp.server.stdio import stdio_server

from polyg.core.app import Polyg
from polyg.server import build_server


async def serve_stdio(core: Polyg) -> None:
    server, _ = build_server(core)
    core.start()
    try:
        async with stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())
    finally:
        await core.close()
