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

A line that is not a JSON-RPC message (malformed or truncated JSON, invalid UTF-8, nesting too
deep, a line over `MAX_LINE`) is answered as the HTTP transport answers such a body: a JSON-RPC
parse error (-32700), or invalid request (-32600) for JSON that is not a JSON-RPC message, and
the session goes on. The SDK drops such lines without a word, and the client waits forever.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import stat
from collections.abc import AsyncIterator
from typing import Any, Self

import anyio
import pydantic_core
from mcp import types
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from pydantic import ValidationError

from polyg.closing import close_fully
from polyg.logs import flush_logs
from polyg.runtime.app import Polyg
from polyg.server import build_server

log = logging.getLogger(__name__)

# One JSON-RPC message is one line; a batch of 1,000 entities is far below this.
MAX_LINE = 64 * 1024 * 1024


class BadInput(Exception):
    """A line that is not a JSON-RPC message, with the error that answers it."""

    def __init__(self, code: int, message: str, request_id: str | int | None = None) -> None:
        super().__init__(message)
        self.error = types.JSONRPCError(jsonrpc="2.0", id=request_id, error=types.ErrorData(code=code, message=message))


def bad_input(exc: Exception, line: bytes | None = None) -> BadInput:
    """The answer to a line that failed to parse as a JSON-RPC message (`exc` says why)."""
    if isinstance(exc, BadInput):
        return exc
    errors = exc.errors(include_url=False, include_input=False) if isinstance(exc, ValidationError) else []
    if errors and errors[0]["type"] != "json_invalid":
        return BadInput(types.INVALID_REQUEST, "Invalid Request: not a JSON-RPC 2.0 message", _request_id(line))
    reason = errors[0].get("ctx", {}).get("error", errors[0]["msg"]) if errors else type(exc).__name__
    return BadInput(types.PARSE_ERROR, f"Parse error: {reason}")


def _request_id(line: bytes | None) -> str | int | None:
    """The id of a JSON object that is no valid request, so the client can match the error."""
    try:
        value: Any = pydantic_core.from_json(line) if line is not None else None
    except ValueError:
        return None
    rid = value.get("id") if isinstance(value, dict) else None
    return rid if isinstance(rid, (str, int)) and not isinstance(rid, bool) else None


class PipeReadStream:
    """The server's read stream, straight off the stdin pipe: one JSON-RPC message per line.

    Duck-types the SDK's `ReadStream` (as its own stdio transport's memory stream does), so a
    message reaches the dispatcher without a relay task in between. A line that is no message
    comes out as a `BadInput` (see `AnsweringBadInput`)."""

    def __init__(self, reader: asyncio.StreamReader) -> None:
        self._reader = reader
        self._oversized = False

    async def receive(self) -> SessionMessage | Exception:
        while True:
            try:
                line = await self._reader.readuntil(b"\n")
            except asyncio.IncompleteReadError as exc:  # end of input
                if not exc.partial.strip() and not self._oversized:
                    raise anyio.EndOfStream from None
                line = exc.partial  # a last line without its newline, most likely cut short
            except asyncio.LimitOverrunError as exc:
                # Over MAX_LINE: drop what is buffered and read on to the line's end.
                await self._reader.readexactly(exc.consumed)
                self._oversized = True
                continue
            if self._oversized:
                self._oversized = False
                return BadInput(types.PARSE_ERROR, f"Parse error: a message longer than {MAX_LINE} bytes")
            if not line.strip():
                continue
            try:
                return SessionMessage(types.jsonrpc_message_adapter.validate_json(line, by_name=False))
            except ValidationError as exc:
                return bad_input(exc, line)

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


class AnsweringBadInput:
    """A read stream that answers what is not a JSON-RPC message on the write stream and passes
    the messages on (the SDK's dispatcher would drop the former silently)."""

    def __init__(self, inner: Any, write: Any) -> None:
        self._inner = inner
        self._write = write

    async def receive(self) -> SessionMessage | Exception:
        while True:
            item = await self._inner.receive()
            if not isinstance(item, Exception):
                return item  # type: ignore[no-any-return]
            answer = bad_input(item)
            log.info("bad input on stdin", extra={"code": answer.error.error.code, "error": str(answer)[:200]})
            with contextlib.suppress(anyio.BrokenResourceError, anyio.ClosedResourceError):
                await self._write.send(SessionMessage(answer.error))

    def __aiter__(self) -> AnsweringBadInput:
        return self

    async def __anext__(self) -> SessionMessage | Exception:
        try:
            return await self.receive()
        except (anyio.EndOfStream, anyio.ClosedResourceError):
            raise StopAsyncIteration from None

    async def aclose(self) -> None:
        await self._inner.aclose()

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


def _is_pipe(fd: int) -> bool:
    try:
        mode = os.fstat(fd).st_mode
    except OSError:
        return False
    return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)


@contextlib.asynccontextmanager
async def event_loop_pipes() -> AsyncIterator[tuple[PipeReadStream, PipeWriteStream] | None]:
    """The server's (read, write) streams on the stdio pipes, or None where the descriptors are not
    pipes or sockets (the caller then uses the SDK's own streams)."""
    loop = asyncio.get_running_loop()
    if not (_is_pipe(0) and _is_pipe(1)):
        # A regular file or a character device (/dev/null): epoll refuses those, and for
        # /dev/null only once the reader is added, after connect_read_pipe has returned.
        yield None
        return
    try:
        wire_in, wire_out = os.dup(0), os.dup(1)
    except OSError:
        yield None
        return
    reader = asyncio.StreamReader(limit=MAX_LINE, loop=loop)
    in_file = os.fdopen(wire_in, "rb", buffering=0)
    out_file = os.fdopen(wire_out, "wb", buffering=0)
    read_transport: asyncio.ReadTransport | None = None
    try:
        read_transport, _ = await loop.connect_read_pipe(
            lambda: asyncio.StreamReaderProtocol(reader, loop=loop), in_file
        )
        transport, protocol = await loop.connect_write_pipe(asyncio.streams.FlowControlMixin, out_file)
    except (OSError, ValueError) as exc:
        log.debug("stdio on worker threads: %s", exc)
        # Closed through their file objects (each closes its descriptor once): closing the
        # numbers by hand left the objects to close them again when collected, by then
        # another file's descriptor, the one the SDK's streams read.
        if read_transport is not None:
            read_transport.close()
        in_file.close()
        out_file.close()
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
    # SIGTERM and Ctrl-C cancel the serving task from the event loop, whatever it waits for (the
    # store loading included). A KeyboardInterrupt raised in the signal handler itself (polyg.cli)
    # can land in a weakref callback or a __del__, where Python prints and ignores it, and the
    # server would run on.
    serving = asyncio.current_task()
    if serving is not None:
        with contextlib.suppress(NotImplementedError, RuntimeError):  # no signals off the main thread
            for signum in (signal.SIGTERM, signal.SIGINT):
                asyncio.get_running_loop().add_signal_handler(signum, serving.cancel)
    core.start()
    stopped_by_signal = False
    try:
        async with event_loop_pipes() as pipes:
            if pipes is not None:
                read, write = pipes
                await server.run(AnsweringBadInput(read, write), write, server.create_initialization_options())
            else:
                async with stdio_server() as (read_stream, write_stream):
                    answering = AnsweringBadInput(read_stream, write_stream)
                    await server.run(answering, write_stream, server.create_initialization_options())
    except (asyncio.CancelledError, KeyboardInterrupt):
        stopped_by_signal = True
        if serving is not None:
            serving.uncancel()  # the cancellation is handled: closing must not be cut short
    finally:
        # Whatever ended the session (the client, a signal, a failure), the database stops.
        await close_fully(core)
    if stopped_by_signal:
        # With the SDK's streams, the thread reading stdin is blocked in read() and would keep
        # the interpreter alive until the client closes the pipe.
        flush_logs()
        logging.shutdown()
        os._exit(0)
