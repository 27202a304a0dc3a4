"""A blocking client for one-shot programs: the standard library's socket, one request at a
time, no event loop.

    with connect_sync() as client:
        status = client.request("node.status")

It speaks the same protocol as `open_client` (bearer token, `node.hello` with this SDK's
protocol and registry digest, the same typed errors) on a hand-written RFC 6455 client:
masked text frames out; in, fragments reassembled under the 1 MiB message bound (a longer
message is closed with 1009), pings answered, a close frame answered and reported. A
command that asks one question and exits (the CLI's `session list`, `node status`) pays
neither for an event loop nor for a WebSocket library at start.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import socket
import struct
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Protocol

from ._wire import CUT_REASON, MAX_MESSAGE_BYTES, error_from_wire, split_url

_GUID: Final = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"
_CHUNK: Final = 65536
_MAX_HEAD: Final = 16 * 1024
_MAX_REJECT_BODY: Final = 64 * 1024
_TEXT, _BINARY, _CONTINUATION, _CLOSE, _PING, _PONG = 0x1, 0x2, 0x0, 0x8, 0x9, 0xA

if TYPE_CHECKING:
    from maia.core import MaiaError


class Target(Protocol):
    """Where to connect: a `_locate.Endpoint`, or the CLI's one-call path's plain pair."""

    @property
    def url(self) -> str: ...

    @property
    def token(self) -> str: ...


def _error(code: str, message: str, details: dict[str, Any]) -> MaiaError:
    # The error type (and attrs under it) loads when an error is made: a call that
    # succeeds, the CLI's one-call path, never imports it.
    from maia.core import MaiaError

    return MaiaError(code, message, details)


def _unavailable(url: str, why: str) -> MaiaError:
    return _error("unavailable", f"node at {url} {why}", {"target": "node", "url": url})


class SyncClient:
    """One connection to a Node, one request at a time. Build it with `connect_sync`."""

    def __init__(self, endpoint: Target, *, timeout_s: float) -> None:
        self.endpoint = endpoint
        self._timeout_s = timeout_s
        self._socket: socket.socket | None = None
        self._buffer = b""
        self._ids = 0
        self.close_code: int | None = None
        self.cut = False  # a frame's write did not finish: the connection was dropped
        self.hello: dict[str, Any] = {}

    def connect(self) -> None:
        """Connect and upgrade. Raises `MaiaError`: unavailable, or the Node's refusal."""
        url = self.endpoint.url
        host, port, path = split_url(url)
        try:
            sock = socket.create_connection((host.strip("[]"), port), timeout=self._timeout_s)
        except OSError as error:
            raise _unavailable(url, f"is unavailable: {error}") from error
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self._socket = sock
        key = base64.b64encode(os.urandom(16)).decode("ascii")
        request = (
            f"GET {path} HTTP/1.1\r\nHost: {host}:{port}\r\nUpgrade: websocket\r\n"
            f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
            f"Authorization: Bearer {self.endpoint.token}\r\n\r\n"
        )
        try:
            sock.sendall(request.encode("ascii"))
            self._await_accept(key, url, time.monotonic() + self._timeout_s)
        except BaseException as error:
            self._drop()
            if isinstance(error, TimeoutError):  # typed, as open_client's
                raise _unavailable(url, "did not answer the upgrade") from error
            raise

    def _await_accept(self, key: str, url: str, deadline: float) -> None:
        while b"\r\n\r\n" not in self._buffer:
            if len(self._buffer) > _MAX_HEAD:
                raise _unavailable(url, "sent an oversized upgrade answer")
            if not self._fill(deadline):
                raise _unavailable(url, "closed during the upgrade")
        head, _, self._buffer = self._buffer.partition(b"\r\n\r\n")
        status_line, *header_lines = head.decode("latin-1").split("\r\n")
        parts = status_line.split(" ", 2)
        status = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else 0
        headers = {}
        for line in header_lines:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        if status == 101:
            accept = base64.b64encode(hashlib.sha1((key + _GUID).encode()).digest()).decode()
            if headers.get("sec-websocket-accept") != accept:
                raise _unavailable(url, "answered the upgrade with a wrong accept key")
            return
        length = min(int(headers.get("content-length", "0") or 0), _MAX_REJECT_BODY)
        while len(self._buffer) < length and self._fill(deadline):
            pass
        try:
            error = json.loads(self._buffer[:length])["error"]
        except (ValueError, KeyError, TypeError):
            raise _unavailable(url, f"refused the connection: HTTP {status}") from None
        raise error_from_wire(error)

    def _fill(self, deadline: float, slow: list[Any] | None = None) -> bool:
        """Read more into the buffer; False at the end of the stream. `slow` is
        [on_slow, at]: past `at` with nothing read, `on_slow()` is called once (and `slow`
        emptied). Raises TimeoutError at `deadline`."""
        assert self._socket is not None
        while True:
            now = time.monotonic()
            until = min(deadline, slow[1]) if slow else deadline
            if until <= now:
                if not slow or now >= deadline:
                    raise TimeoutError
                on_slow = slow[0]
                slow.clear()
                on_slow()
                continue
            self._socket.settimeout(until - now)
            try:
                chunk = self._socket.recv(_CHUNK)
            except TimeoutError:
                continue  # the loop decides: the note's time, or the deadline
            except OSError:
                return False
            if not chunk:
                return False
            self._buffer += chunk
            return True

    def _send_frame(self, opcode: int, payload: bytes) -> None:
        assert self._socket is not None
        n = len(payload)
        if n < 126:
            header = struct.pack("!BB", 0x80 | opcode, 0x80 | n)
        elif n < 65536:
            header = struct.pack("!BBH", 0x80 | opcode, 0x80 | 126, n)
        else:
            header = struct.pack("!BBQ", 0x80 | opcode, 0x80 | 127, n)
        mask = os.urandom(4)
        key = int.from_bytes((mask * (n // 4 + 1))[:n], "big")
        masked = (int.from_bytes(payload, "big") ^ key).to_bytes(n, "big") if n else b""
        # Bounded by the client's timeout, whatever the last read left set.
        self._socket.settimeout(self._timeout_s)
        try:
            self._socket.sendall(header + mask + masked)
        except BaseException:
            # Part of the frame may be on the wire (a timeout, an interrupt): any later frame
            # would land inside it, so the connection is dropped.
            self.cut = True
            self.close_code = self.close_code or 1006
            self._drop()
            raise

    def _take(self, n: int, deadline: float, slow: list[Any]) -> bytes:
        while len(self._buffer) < n:
            if not self._fill(deadline, slow):
                self.close_code = self.close_code or 1006
                raise self._lost()
            slow.clear()  # a byte arrived: the Node answers, no note needed
        out, self._buffer = self._buffer[:n], self._buffer[n:]
        return out

    def _receive(self, deadline: float, slow: list[Any]) -> bytes:
        """The next whole text or binary message. Raises `MaiaError` when the connection
        ends or a message passes the bound (closed with 1009); TimeoutError at `deadline`."""
        parts: list[bytes] = []
        size = 0
        while True:
            first, second = self._take(2, deadline, slow)
            length = second & 0x7F
            if length == 126:
                (length,) = struct.unpack("!H", self._take(2, deadline, slow))
            elif length == 127:
                (length,) = struct.unpack("!Q", self._take(8, deadline, slow))
            opcode = first & 0x0F
            if opcode in (_TEXT, _BINARY, _CONTINUATION) and size + length > MAX_MESSAGE_BYTES:
                self.close_code = 1009
                self._close(1009, "frame_too_large")
                raise self._lost()
            payload = self._take(length, deadline, slow)
            if opcode == _PING:
                self._send_frame(_PONG, payload)
            elif opcode == _CLOSE:
                self.close_code = struct.unpack("!H", payload[:2])[0] if len(payload) >= 2 else 1005
                self._close(self.close_code, "")
                raise self._lost()
            elif opcode in (_TEXT, _BINARY, _CONTINUATION):
                parts.append(payload)
                size += length
                if first & 0x80:
                    return b"".join(parts)

    def request(
        self,
        method: str,
        params: dict[str, Any] | None = None,
        *,
        on_slow: Callable[[], None] | None = None,
        slow_after_s: float = 1.0,
    ) -> Any:
        """Send one request and return its JSON result; `on_slow()` is called once if no
        answer has begun after `slow_after_s`.

        Raises `MaiaError`: the Node's typed error, `frame_too_large` (over 1 MiB: nothing
        is sent), `unavailable` (the connection is lost), `deadline_exceeded` (no answer
        within the client's timeout).
        """
        if self._socket is None:
            if self.cut:
                raise self._lost()
            raise _error("unavailable", "node is unavailable: not connected", {"target": "node"})
        self._ids += 1
        request_id = self._ids
        frame = json.dumps({"id": request_id, "method": method, "params": params or {}},
                           ensure_ascii=False, separators=(",", ":")).encode()  # fmt: skip
        if len(frame) > MAX_MESSAGE_BYTES:
            raise _error("frame_too_large", f"a frame exceeds {MAX_MESSAGE_BYTES} bytes",
                            {"limit": MAX_MESSAGE_BYTES, "method": method})  # fmt: skip
        now = time.monotonic()
        deadline = now + self._timeout_s
        slow: list[Any] = [on_slow, now + slow_after_s] if on_slow is not None else []
        try:
            try:
                self._send_frame(_TEXT, frame)
            except TimeoutError:  # the frame did not leave within the timeout: cut
                raise self._lost() from None
            while True:
                answer = json.loads(self._receive(deadline, slow))
                if isinstance(answer, dict) and answer.get("id") == request_id:
                    break
        except TimeoutError:
            ms = int(self._timeout_s * 1000)
            raise _error("deadline_exceeded", f"{method} did not finish within {ms} ms",
                            {"method": method, "ms": ms}) from None  # fmt: skip
        except OSError as error:
            self.close_code = self.close_code or 1006
            raise self._lost() from error
        if answer.get("ok") is True:
            return answer.get("result")
        raise error_from_wire(answer.get("error"))

    def _lost(self) -> MaiaError:
        if self.close_code == 1009:
            return _error(
                "frame_too_large",
                f"a frame exceeds {MAX_MESSAGE_BYTES} bytes (the connection was closed)",
                {"limit": MAX_MESSAGE_BYTES, "closeCode": 1009},
            )
        if self.cut:
            return _error("unavailable", f"node is unavailable: {CUT_REASON} (reconnect to go on)",
                          {"target": "node", "closeCode": self.close_code})  # fmt: skip
        return _error("unavailable", "node is unavailable: the connection was lost",
                         {"target": "node", "closeCode": self.close_code})  # fmt: skip

    def _close(self, code: int, reason: str) -> None:
        with suppress(OSError):
            self._send_frame(_CLOSE, struct.pack("!H", code) + reason.encode()[:120])

    def _drop(self) -> None:
        sock, self._socket = self._socket, None
        if sock is not None:
            sock.close()

    def close(self) -> None:
        """Say goodbye (without waiting for the answer) and close the socket."""
        if self._socket is not None and self.close_code is None:
            self._close(1000, "bye")
        self._drop()


@contextmanager
def connect_sync(
    url: str | None = None,
    *,
    token: str | None = None,
    home: str | Path | None = None,
    timeout_s: float = 10.0,
    require_registry_match: bool = True,
    hello: Mapping[str, Any] | None = None,
) -> Iterator[SyncClient]:
    """Connect to a Node and perform the hello, blocking (its answer: `client.hello`); the
    Node is found, and `hello` says its options, as with `open_client`. Raises `MaiaError`
    as `open_client` does."""

    from ._locate import locate_node
    from ._projection import hello_params, registry_mismatch

    endpoint = locate_node(url, token=token, home=Path(home) if home is not None else None)
    client = SyncClient(endpoint, timeout_s=timeout_s)
    try:
        client.connect()
        sent = hello_params(hello)
        answer = client.request("node.hello", sent)
        if require_registry_match and not answer.get("registryMatch", False):
            raise registry_mismatch(sent, answer)
        client.hello = answer
        yield client
    finally:
        client.close()
