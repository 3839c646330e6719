"""stdio transport: the protocol owns stdout; the store opens in the background.

The SDK's default stdio streams read and write through worker threads (one thread hop for
each line read, and two for each line written and flushed), and hand each message on through
memory streams and relay tasks. On a loaded two-core machine those hops are a good part of a
tool call's round trip, so polyg reads and writes the pipes on the event loop, parsing a line
into a message where the dispatcher asks for the next one and writing a response where it is
sent (the SDK's `ReadStream`/`WriteStream` protocols). It falls back to the SDK's streams where
that is not possible (stdin a regular file, say). As the SDK does, it moves the protocol to
private copies of the descriptors and points fd 0 at the null device and fd 1 at stderr, so
stray output of libraries cannot corrupt the wire.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
from collections.abc import AsyncIterator
from typing import Self

import anyio
from mcp import types
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage

from polyg.core.app import Polyg
from polyg.logs import flush_logs
from polyg.server import build_server

log = logging.getLogger(__name__)

# One JSON-RPC message is one line; a batch of 1,000 entities is far below this.
MAX_LINE = 64 * 1024 * 1024


class PipeReadStream:
    """The server's read stream, straight off the stdin pipe: one JSON-RPC message per line.

    Duck-types the SDK's `ReadStream` (as its own stdio transport's memory stream does), so a
    message reaches the dispatcher without a relay task in between."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self._reader = reader

    async def receive(self) -> SessionMessage | Exception:
        line = await self._reader.readline()
        if not line:
            raise anyio.EndOfStream
        try:
            return SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
        except Exception as exc:  # the SDK answers a malformed line with a parse error
            return exc

    def __aiter__(self) -> PipeReadStream:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except anyio.EndOfStream:
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        pass  # the pipe is closed with its transport, when serving ends

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


class PipeWriteStream:
    """The server's write stream, straight onto the stdout pipe (see `PipeReadStream`).

    A line is handed to the transport in one write, so concurrent responses never interleave."""

    def __init__(self, writer: asyncio.StreamWriter) -> None:
        self._writer = writer

    async def send(self, item: SessionMessage, /) -> None:
        line = item.message.model_dump_json(by_alias=True, exclude_unset=True) + "\n"
        try:
            self._writer.write(line.encode("utf-8"))
            await self._writer.drain()
        except (ConnectionError, RuntimeError) as exc:  # the client is gone (RuntimeError: closed)
            # What the SDK's memory stream raises then; its dispatcher drops such a response.
            raise anyio.BrokenResourceError from exc

    async def aclose(self) -> None:
        pass

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()


@contextlib.asynccontextmanager
async def event_loop_pipes() -> AsyncIterator[tuple[PipeReadStream, PipeWriteStream] | None]:
    """The server's (read, write) streams on the stdio pipes, or None where the descriptors are not
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
        yield PipeReadStream(reader), PipeWriteStream(writer)
    finally:
        os.dup2(saved[0], 0)
        os.dup2(saved[1], 1)
        for fd in saved:
            os.close(fd)
        transport.close()


async def serve_stdio(core: Polyg) -> None:
    server, _ = build_server(core)
    # SIGTERM cancels the serving task from the event loop, as asyncio.run does for Ctrl-C.
    # A KeyboardInterrupt raised in the signal handler itself can land in a weakref callback
    # or a __del__, where Python prints and ignores it, and the server would run on.
    serving = asyncio.current_task()
    if serving is not None:
        with contextlib.suppress(NotImplementedError, RuntimeError):  # no signals off the main thread
            asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, serving.cancel)
    core.start()
    try:
        async with event_loop_pipes() as pipes:
            if pipes is not None:
                await server.run(*pipes, server.create_initialization_options())
            else:
                async with stdio_server() as (read_stream, write_stream):
                    await server.run(read_stream, write_stream, server.create_initialization_options())
    except (asyncio.CancelledError, KeyboardInterrupt):
        # Stopped by a signal. With the SDK's streams, the thread reading stdin is blocked in
        # read() and would keep the interpreter alive until the client closes the pipe.
        if serving is not None:
            serving.uncancel()  # the cancellation is handled: closing must not be cut short
        await core.close()
        flush_logs()
        logging.shutdown()
        os._exit(0)
    await core.close()
