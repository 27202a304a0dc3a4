"""The API's cap of 256 open connections at a real Node process, met by a burst: with 250
connections open, 20 more whose TCP connections are all accepted before any sends its
upgrade. docs/node.md: "At most 256 connections may be open at once, counted from the
moment the TCP connection is accepted ...; one more is refused ... with HTTP 503 and
`overloaded`": so 6 of the 20 are upgraded and 14 refused. The Node used to compare the
number open at each upgrade (the burst's refused connections included) with the cap, so a
refused connection took an admitted one's place and all 20 were refused; it now counts the
upgrades it admitted."""

from __future__ import annotations

import base64
import os
import socket
import time

from tests.maia.node.conftest import NodeProcess

from ._wire import RawApi

CAP = 256
HELD = 250
BURST = 20


def _status_of_upgrade(connection: socket.socket, port: int, token: str) -> int:
    key = base64.b64encode(os.urandom(16)).decode()
    connection.sendall(
        (
            f"GET /api/v1 HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\n"
            f"Sec-WebSocket-Version: 13\r\nAuthorization: Bearer {token}\r\n\r\n"
        ).encode()
    )
    head = b""
    while b"\r\n" not in head:
        chunk = connection.recv(1)
        assert chunk, "closed without an answer to the upgrade"
        head += chunk
    return int(head.split(b" ")[1])


def _burst_statuses(node_process: NodeProcess) -> list[int]:
    held: list[RawApi] = []
    burst: list[socket.socket] = []
    try:
        for _ in range(HELD):
            held.append(RawApi(node_process.port, node_process.token))
        for api in held[:3]:
            api.hello()
        for _ in range(BURST):
            burst.append(socket.create_connection(("127.0.0.1", node_process.port), timeout=10))
        time.sleep(1.0)  # every TCP connection of the burst accepted before any upgrade
        return [_status_of_upgrade(c, node_process.port, node_process.token) for c in burst]
    finally:
        for tcp in burst:
            tcp.close()
        for api in held:
            api.close()


def test_the_node_serves_after_a_burst_past_the_cap(node_process: NodeProcess) -> None:
    """Past the burst, every refusal was 503 and a new connection is served again."""
    statuses = _burst_statuses(node_process)
    assert set(statuses) <= {101, 503}
    assert statuses.count(503) >= HELD + BURST - CAP
    time.sleep(0.5)
    with RawApi(node_process.port, node_process.token) as connection:
        connection.hello()


def test_a_burst_past_the_cap_is_admitted_up_to_the_cap(node_process: NodeProcess) -> None:
    """250 open, 20 accepted at once: 6 upgraded (101), 14 refused (503)."""
    statuses = _burst_statuses(node_process)
    assert statuses.count(101) == CAP - HELD, statuses
    assert statuses.count(503) == HELD + BURST - CAP
