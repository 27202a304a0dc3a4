"""The SDK's blocking client (`connect_sync`): against a real Node (answers, typed errors,
refusals, the slow note, its deadline), and against a loopback peer that pings, fragments,
oversends and closes, to check the RFC 6455 framing both ways."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import socket
import struct
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest

from maia.client import Discovery, MaiaError, SyncClient, connect_sync, process_start_time
from maia.client._locate import Endpoint
from maia.core import new_id
from maia.protocol import REGISTRY

NodeProcess = tuple[Path, Discovery]


def test_answers_and_typed_errors_from_a_real_node(node_process: NodeProcess) -> None:
    """Hello (registry matched), results, and the Node's typed errors; a refused local
    frame (over 1 MiB, nothing sent) leaves the connection usable."""
    home, record = node_process
    with connect_sync(home=home) as client:
        assert client.hello["registryMatch"] is True
        assert client.hello["registryDigest"] == REGISTRY.digest
        assert client.request("node.status")["nodeId"] == record.node_id
        with pytest.raises(MaiaError) as missing:
            client.request("session.show", {"sessionId": "session_" + "0" * 32})
        assert missing.value.code == "resource_not_found"
        with pytest.raises(MaiaError) as invalid:
            client.request("node.status", {"extra": True})
        assert invalid.value.code == "validation_failed"
        with pytest.raises(MaiaError) as big:
            client.request("node.status", {"x": "a" * (1024 * 1024)})
        assert big.value.code == "frame_too_large"
        assert "sessions" in client.request("session.list")


def test_a_wrong_token_is_refused_as_unauthenticated(node_process: NodeProcess) -> None:
    """The Node's HTTP refusal of the upgrade comes back as its typed error."""
    _, record = node_process
    with pytest.raises(MaiaError) as refused, connect_sync(record.url, token="wrong"):
        pass
    assert refused.value.code == "unauthenticated"


def test_nothing_listening_is_unavailable() -> None:
    """A port nobody listens on: `unavailable` naming the Node, at once."""
    probe = socket.socket()
    probe.bind(("127.0.0.1", 0))
    port = probe.getsockname()[1]
    probe.close()
    with pytest.raises(MaiaError) as refused:
        connect_sync(f"ws://127.0.0.1:{port}/api/v1", token="t").__enter__()
    assert refused.value.code == "unavailable"
    assert refused.value.details["target"] == "node"


def _waiting_session(client: SyncClient, home: Path) -> str:
    root = home.parent / "sync-project"
    root.mkdir(exist_ok=True)
    added = client.request("project.add", {"commandId": new_id("command"),
                                           "rootPath": str(root.resolve())})  # fmt: skip
    project = added["project"]["projectId"]
    made = client.request("session.create", {"commandId": new_id("command"), "title": "sync",
                                             "projectId": project})  # fmt: skip
    return str(made["session"]["sessionId"])


def test_the_slow_note_and_the_deadline(node_process: NodeProcess) -> None:
    """A request still unanswered after `slow_after_s` calls `on_slow` once; one past the
    client's timeout fails with deadline_exceeded."""
    home, _ = node_process
    with connect_sync(home=home, timeout_s=1.0) as client:
        session = _waiting_session(client, home)
        notes: list[str] = []
        waited = client.request("session.wait", {"sessionId": session, "states": ["failed"],
                                                 "waitMilliseconds": 600},
                                on_slow=lambda: notes.append("slow"), slow_after_s=0.2)  # fmt: skip
        assert waited["satisfied"] is False
        assert notes == ["slow"]
        with pytest.raises(MaiaError) as late:
            client.request("session.wait", {"sessionId": session, "states": ["failed"],
                                            "waitMilliseconds": 3000})  # fmt: skip
        assert late.value.code == "deadline_exceeded"


def test_process_start_time_matches_psutil() -> None:
    """The /proc reading equals psutil's for live processes; a gone one is None."""
    for pid in (os.getpid(), os.getppid(), 1):
        assert process_start_time(pid) == pytest.approx(psutil.Process(pid).create_time(), abs=0.02)
    child = psutil.Popen(["sleep", "0"])
    child.wait(timeout=10)
    assert process_start_time(child.pid) is None


# -- a loopback peer that speaks the server side of RFC 6455 -------------------------------


def _frame(opcode: int, payload: bytes, fin: bool = True) -> bytes:
    n = len(payload)
    first = (0x80 if fin else 0) | opcode
    if n < 126:
        return struct.pack("!BB", first, n) + payload
    if n < 65536:
        return struct.pack("!BBH", first, 126, n) + payload
    return struct.pack("!BBQ", first, 127, n) + payload


def _read_frame(conn: socket.socket) -> tuple[int, bytes]:
    def exact(n: int) -> bytes:
        data = b""
        while len(data) < n:
            chunk = conn.recv(n - len(data))
            if not chunk:
                raise ConnectionError
            data += chunk
        return data

    first, second = exact(2)
    n = second & 0x7F
    if n == 126:
        (n,) = struct.unpack("!H", exact(2))
    elif n == 127:
        (n,) = struct.unpack("!Q", exact(8))
    assert second & 0x80, "a client frame must be masked"
    mask = exact(4)
    payload = bytes(b ^ mask[i % 4] for i, b in enumerate(exact(n)))
    return first & 0x0F, payload


Script = Callable[[socket.socket, list[tuple[int, bytes]]], None]


@pytest.fixture
def peer() -> Iterator[Callable[[Script], tuple[Endpoint, list[tuple[int, bytes]]]]]:
    """Serves one connection on 127.0.0.1: accepts the upgrade, then runs the script; the
    frames it read are complete once `client.close()` returned and the peer's thread ended
    (`_settled`)."""
    threads: list[threading.Thread] = []
    listeners: list[socket.socket] = []

    def start(script: Script) -> tuple[Endpoint, list[tuple[int, bytes]]]:
        listener = socket.create_server(("127.0.0.1", 0))
        listener.settimeout(10)
        listeners.append(listener)
        seen: list[tuple[int, bytes]] = []

        def serve() -> None:
            conn, _ = listener.accept()
            conn.settimeout(10)
            with conn:
                head = b""
                while b"\r\n\r\n" not in head:
                    head += conn.recv(4096)
                key = next(line.split(b":", 1)[1].strip() for line in head.split(b"\r\n")
                           if line.lower().startswith(b"sec-websocket-key"))  # fmt: skip
                accept = base64.b64encode(hashlib.sha1(key + b"258EAFA5-E914-47DA-95CA-"
                                                       b"C5AB0DC85B11").digest())  # fmt: skip
                conn.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                             b"Connection: Upgrade\r\nSec-WebSocket-Accept: " + accept +
                             b"\r\n\r\n")  # fmt: skip
                script(conn, seen)

        thread = threading.Thread(target=serve, daemon=True)
        thread.start()
        threads.append(thread)
        _THREADS[id(seen)] = thread
        port = listener.getsockname()[1]
        return Endpoint(f"ws://127.0.0.1:{port}/api/v1", "token"), seen

    yield start
    for thread in threads:
        thread.join(timeout=10)
    for listener in listeners:
        listener.close()


_THREADS: dict[int, threading.Thread] = {}


def _settled(seen: list[tuple[int, bytes]]) -> list[tuple[int, bytes]]:
    """The frames the peer read, once its thread has ended (bounded wait)."""
    thread = _THREADS.pop(id(seen))
    thread.join(timeout=10)
    assert not thread.is_alive()
    return seen


def _answer(request: bytes, result: Any) -> bytes:
    return json.dumps({"id": json.loads(request)["id"], "ok": True, "result": result}).encode()


def test_pings_are_answered_and_fragments_reassembled(peer: Any) -> None:
    """A ping before the answer gets its pong; an answer in three fragments (text, then
    continuations) is one message; a large request is masked and whole on the wire."""

    def script(conn: socket.socket, seen: list[tuple[int, bytes]]) -> None:
        seen.append(_read_frame(conn))
        conn.sendall(_frame(0x9, b"are you there"))
        seen.append(_read_frame(conn))  # the pong
        whole = _answer(seen[0][1], {"text": "x" * 70_000})
        third = len(whole) // 3
        conn.sendall(_frame(0x1, whole[:third], fin=False)
                     + _frame(0x0, whole[third : 2 * third], fin=False)
                     + _frame(0x0, whole[2 * third :]))  # fmt: skip
        seen.append(_read_frame(conn))  # the close on the way out

    endpoint, seen = peer(script)
    client = SyncClient(endpoint, timeout_s=10)
    client.connect()
    assert client.request("big.echo", {"pad": "p" * 100_000}) == {"text": "x" * 70_000}
    client.close()
    seen = _settled(seen)
    assert json.loads(seen[0][1])["params"]["pad"] == "p" * 100_000
    assert seen[1] == (0xA, b"are you there")
    assert seen[2][0] == 0x8
    assert struct.unpack("!H", seen[2][1][:2])[0] == 1000


def test_a_message_over_the_bound_is_closed_with_1009(peer: Any) -> None:
    """A frame announcing more than 1 MiB: the client closes with 1009 and raises
    frame_too_large without reading the body."""

    def script(conn: socket.socket, seen: list[tuple[int, bytes]]) -> None:
        _read_frame(conn)
        conn.sendall(struct.pack("!BBQ", 0x81, 127, 2 * 1024 * 1024))
        seen.append(_read_frame(conn))

    endpoint, seen = peer(script)
    client = SyncClient(endpoint, timeout_s=10)
    client.connect()
    with pytest.raises(MaiaError) as big:
        client.request("node.status")
    client.close()
    seen = _settled(seen)
    assert big.value.code == "frame_too_large"
    assert seen[0][0] == 0x8
    assert struct.unpack("!H", seen[0][1][:2])[0] == 1009


def test_the_peer_closing_fails_the_request_as_unavailable(peer: Any) -> None:
    """A close frame instead of an answer: `unavailable` with the close code; the client
    answers the close."""

    def script(conn: socket.socket, seen: list[tuple[int, bytes]]) -> None:
        _read_frame(conn)
        conn.sendall(_frame(0x8, struct.pack("!H", 1001) + b"going away"))
        seen.append(_read_frame(conn))

    endpoint, seen = peer(script)
    client = SyncClient(endpoint, timeout_s=10)
    client.connect()
    with pytest.raises(MaiaError) as lost:
        client.request("node.status")
    client.close()
    seen = _settled(seen)
    assert lost.value.code == "unavailable"
    assert lost.value.details["closeCode"] == 1001
    assert struct.unpack("!H", seen[0][1][:2])[0] == 1001
