"""stdio transport: the protocol owns stdout; the store opens in the background.

The SDK's default stdio streams read and write through worker threads (one thread hop for
each line read, and two for each line written and flushed). On a loaded two-core machine
those hops are a good part of a tool call's round trip, so polyg reads and writes the pipes
on the event loop instead, and falls back to the SDK's streams where that is not possible
(stdin a regular file, say). As the SDK does, it moves the protocol to private copies of the
descriptors and points fd 0 at the null device and fd 1 at stderr, so stray output of
libraries cannot corrupt the wire.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
from collections.abc import AsyncIterator
from typing import Any

from mcp.server.stdio import stdio_server

from polyg.core.app import Polyg
from polyg.server import build_server

log = logging.getLogger(__name__)

# One JSON-RPC message is one line; a batch of 1,000 entities is far below this.
MAX_LINE = 64 * 1024 * 1024


class PipeLines:
    """Lines of a pipe, read on the event loop (what the SDK's stdin reader iterates over)."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self._reader = reader

    def __aiter__(self) -> PipeLines:
        return self

    async def __anext__(self) -> str:
        line = await self._reader.readline()
        if not line:
            raise StopAsyncIteration
        return line.decode("utf-8", errors="replace")


class PipeWriter:
    """Text written to a pipe from the event loop (what the SDK's stdout writer calls)."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer

    async def write(self, text: str) -> None:
        self._writer.write(text.encode("utf-8"))

    async def flush(self) -> None:
        await self._writer.drain()


@contextlib.asynccontextmanager
async def event_loop_pipes() -> AsyncIterator[tuple[Any, Any] | None]:
    """(stdin lines, stdout writer) on the event loop, or None where the descriptors are not
    pipes or sockets (the caller then uses the SDK's own streams)."""
    loop = asyncio.get_running_loop()
    try:
        wire_in, wire_out = os.dup(0), os.dup(1)
    except OSError:
        yield None
        return
    reader = asyncio.StreamReader(limit=MAX_LINE, loop=loop)
    try:
        in_file = os.fdopen(wire_in, "rb", buffering=0)
        out_file = os.fdopen(wire_out, "wb", buffering=0)
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader, loop=loop), in_file)
        transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, out_file)
    except (OSError, ValueError) as exc:  # e.g. a regular file: the event loop cannot poll it
        log.debug("stdio on worker threads: %s", exc)
        for fd in (wire_in, wire_out):
            with contextlib.suppress(OSError):
                os.close(fd)
        yield None
        return
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    saved = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.dup2(2, 1)
    os.close(null)
    try:
        yield PipeLines(reader), PipeWriter(writer)
    finally:
        os.dup2(saved[0], 0)
        os.dup2(saved[1], 1)
        for fd in saved:
            os.close(fd)
        transport.close()


async def serve_stdio(core: Polyg) -> None:
    server, _ = build_server(core)
    core.start()
    try:
        async with event_loop_pipes() as pipes:
            stdin, stdout = pipes if pipes is not None else (None, None)
            async with stdio_server(stdin, stdout) as (read_stream, write_stream):
                await server.run(read_stream, write_stream, server.create_initialization_options())
    except (asyncio.CancelledError, KeyboardInterrupt):
        # Stopped by a signal. With the SDK's streams, the thread reading stdin is blocked in
        # read() and would keep the interpreter alive until the client closes the pipe.
        await core.close()
        logging.shutdown()
        os._exit(0)
    await core.close()
