"""A Node stopped (SIGTERM) while a peer floods its API with pipelined requests and reads
every answer: the reader task that reads the socket itself (`_websocket._receive`, whose
first read has no cancellation check when data is there) still ends when cancelled, so the
Node exits promptly instead of serving the flood."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from maia.core import read_discovery, read_token
from maia.node import NodeHome
from tests.maia.node._raw import client_frame, port_of, upgrade_request
from tests.maia.node.test_direct_frames import TEXT, _hello
from tests.maia.node.test_direct_order import _unknown

FLOOD_S = 60.0  # the flood's own bound, even if the Node never stops


class _Flood:
    """A peer on a blocking socket: one thread writes batches of requests, one reads."""

    def __init__(self, port: int, token: str, batch: bytes | None = None) -> None:
        self._batch = batch or b"".join(client_frame(TEXT, _unknown(i + 1)) for i in range(500))
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        headers = {"Host": f"127.0.0.1:{port}", "Authorization": f"Bearer {token}"}
        self.sock.sendall(upgrade_request(port, headers))
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = self.sock.recv(4096)
            assert chunk, "the Node closed the handshake"
            head += chunk
        assert head.startswith(b"HTTP/1.1 101"), head[:80]
        self.sock.sendall(client_frame(TEXT, _hello(0)))
        self.received = len(head.split(b"\r\n\r\n", 1)[1])
        self.stop = threading.Event()
        self.ended = threading.Event()  # the Node closed the connection
        self._threads = [threading.Thread(target=f, daemon=True) for f in (self._write, self._read)]
        for thread in self._threads:
            thread.start()

    def _write(self) -> None:
        batch = self._batch
        deadline = time.monotonic() + FLOOD_S
        try:
            while not self.stop.is_set() and time.monotonic() < deadline:
                self.sock.sendall(batch)
        except OSError:
            pass

    def _read(self) -> None:
        deadline = time.monotonic() + FLOOD_S + 5
        try:
            while not self.stop.is_set() and time.monotonic() < deadline:
                try:
                    chunk = self.sock.recv(1 << 16)
                except TimeoutError:
                    continue
                if not chunk:
                    break
                self.received += len(chunk)
        except OSError:
            pass
        self.ended.set()

    def close(self) -> None:
        self.stop.set()
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        for thread in self._threads:
            thread.join(timeout=FLOOD_S + 10)
        self.sock.close()


@pytest.fixture
def node_process(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], int, str]]:
    home = NodeHome(tmp_path / "home")
    home.ensure()
    with (home.root / "test.log").open("wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "maia.node", "start", "--home", str(home.root)],
            stdout=log,
            stderr=log,
        )
    try:
        deadline = time.monotonic() + 60
        record = None
        while time.monotonic() < deadline and process.poll() is None:
            record = read_discovery(home.discovery_path)
            if record is not None and record.pid == process.pid:
                break
            time.sleep(0.05)
        assert record is not None, "the Node did not start"
        assert record.pid == process.pid
        yield process, port_of(record.url), read_token(home.token_path)
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(timeout=30)


def test_sigterm_amid_a_flood_of_pipelined_requests_stops_the_node(
    node_process: tuple[subprocess.Popen[bytes], int, str],
) -> None:
    """Two peers flood the Node with requests answered at once (unknown_method) and read
    every answer; once answers flow, SIGTERM: the Node exits within 30 s (the flood would
    last 60 s) and the peers see their connections end."""
    process, port, token = node_process
    floods = [_Flood(port, token) for _ in range(2)]
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and min(f.received for f in floods) < 1 << 20:
            time.sleep(0.05)
        assert min(f.received for f in floods) >= 1 << 20, "the flood was not answered"
        _stops_on_sigterm(process, "the Node served the flood on after SIGTERM")
        for flood in floods:
            assert flood.ended.wait(timeout=10), "a peer's connection outlived the Node"
    finally:
        for flood in floods:
            flood.close()


def _stops_on_sigterm(process: subprocess.Popen[bytes], failure: str) -> None:
    """SIGTERM, then the Node exits 0 within 30 s (else `failure`)."""
    process.terminate()
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        pytest.fail(failure)
    assert process.returncode == 0


PONGS = b"".join(client_frame(0xA, b"beat") for _ in range(4000))  # unsolicited: RFC 6455 5.5.3


def test_sigterm_amid_a_flood_of_unsolicited_pongs_stops_the_node(
    node_process: tuple[subprocess.Popen[bytes], int, str],
) -> None:
    """A peer that only sends unsolicited pongs (a unidirectional heartbeat, RFC 6455
    5.5.3), as fast as it can, its answered hello read: once it floods, SIGTERM: the Node
    exits within 30 s (the flood would last 60 s)."""
    process, port, token = node_process
    flood = _Flood(port, token, PONGS)
    try:
        time.sleep(2.0)  # the flood under way (a pong has no answer to wait for)
        assert process.poll() is None
        _stops_on_sigterm(process, "the Node went on reading the pongs after SIGTERM")
    finally:
        flood.close()
