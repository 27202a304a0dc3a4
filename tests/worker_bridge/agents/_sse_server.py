"""A loopback HTTP server for the mock model APIs: records requests, serves scripted SSE.

Threaded stdlib `http.server` bound to 127.0.0.1 only. Each POST body is parsed as JSON and
kept (bounded: at most 500 requests) so a test can read what the agent sent. A route
handler returns a `Reply`: a status with a JSON body, or a list of SSE events, optionally
held open (`hold_s`) after the events so a test can interrupt a turn mid-stream.
"""

from __future__ import annotations

import http.server
import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import attrs

MAX_REQUESTS = 500
MAX_BODY = 16 * 1024 * 1024


@attrs.frozen
class Reply:
    """What the mock answers: SSE `events` (name, payload) or a JSON `body` with `status`."""

    events: tuple[tuple[str | None, dict[str, Any]], ...] = ()
    status: int = 200
    body: dict[str, Any] | None = None
    hold_s: float = 0.0  # keep the stream open (no end) this long after the events


@attrs.define
class Recorded:
    method: str
    path: str
    body: Any


Route = Callable[[Recorded], Reply]


class Script:
    """The scripted replies a mock API's main requests take in order, and those requests.

    A mock's route (a subclass's `__call__`) answers its side requests itself and hands
    each main request to `take`."""

    def __init__(self, *replies: Reply) -> None:
        self.replies = list(replies)
        self.main: list[Recorded] = []
        self.lock = threading.Lock()

    def add(self, *replies: Reply) -> None:
        with self.lock:
            self.replies.extend(replies)

    def take(self, request: Recorded, exhausted: Reply) -> Reply:
        """Record `request` and pop the next reply (`exhausted` once the script is done)."""
        with self.lock:
            self.main.append(request)
            if not self.replies:
                return exhausted
            return self.replies.pop(0)


class SseServer:
    """The server; `route(recorded) -> Reply` decides every answer."""

    def __init__(self, route: Route) -> None:
        self.route = route
        self.requests: list[Recorded] = []
        self.lock = threading.Lock()
        self.released = threading.Event()  # set to end every held stream early
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self._serve(None)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(min(length, MAX_BODY))
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = raw.decode("utf-8", "replace")
                self._serve(body)

            def _serve(self, body: Any) -> None:
                recorded = Recorded(self.command, self.path, body)
                with server.lock:
                    if len(server.requests) < MAX_REQUESTS:
                        server.requests.append(recorded)
                reply = server.route(recorded)
                try:
                    if reply.body is not None or not reply.events:
                        self._json(reply.status, reply.body or {})
                    else:
                        self._stream(reply)
                except (BrokenPipeError, ConnectionResetError):
                    pass

            def _json(self, status: int, body: dict[str, Any]) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, reply: Reply) -> None:
                self.send_response(reply.status)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Cache-Control", "no-cache")
                self.send_header("Connection", "close")
                self.end_headers()
                for name, payload in reply.events:
                    head = f"event: {name}\n" if name else ""
                    self.wfile.write(f"{head}data: {json.dumps(payload)}\n\n".encode())
                    self.wfile.flush()
                deadline = time.monotonic() + reply.hold_s
                while time.monotonic() < deadline and not server.released.is_set():
                    time.sleep(0.05)
                self.close_connection = True

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def posts(self, path: str) -> list[Recorded]:
        with self.lock:
            return [r for r in self.requests if r.method == "POST" and r.path.startswith(path)]


@contextmanager
def serve(route: Route) -> Iterator[SseServer]:
    """Run an `SseServer` in a thread for the block; closed (and held streams released) after."""
    server = SseServer(route)
    thread = threading.Thread(target=server.httpd.serve_forever, kwargs={"poll_interval": 0.05})
    thread.daemon = True
    thread.start()
    try:
        yield server
    finally:
        server.released.set()
        server.httpd.shutdown()
        server.httpd.server_close()
        thread.join(5)
