"""The HTTP server's listening socket, as asyncio serves it (no timing measured)."""

from __future__ import annotations

import asyncio
import socket

import pytest

from polyg.http import bind

pytestmark = pytest.mark.anyio


async def test_connections_accepted_on_the_listening_socket_send_without_delay() -> None:
    # With Nagle's algorithm on, a response's body waited for the client's delayed ACK of its
    # headers (40 ms per call); asyncio turns it off only on sockets that say they are TCP.
    listening = bind("127.0.0.1", 0)
    port = listening.getsockname()[1]
    accepted: asyncio.Future[int] = asyncio.get_running_loop().create_future()

    class Record(asyncio.Protocol):
        def connection_made(self, transport: asyncio.BaseTransport) -> None:
            sock = transport.get_extra_info("socket")
            accepted.set_result(sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY))
            transport.close()

    server = await asyncio.get_running_loop().create_server(Record, sock=listening)
    try:
        _, writer = await asyncio.open_connection("127.0.0.1", port)
        assert await asyncio.wait_for(accepted, 10) != 0
        writer.close()
    finally:
        server.close()
        await server.wait_closed()
