"""JSON-RPC 2.0 over a harness's stdio lines (Codex app-server, ACP agents).

The harness is both server (answers our requests) and client (sends us requests such as
approvals, and notifications). `RpcPeer.call` sends a request and pumps lines until its
response, handing every other message to a callback, so one loop serves both directions.
Codex omits the `"jsonrpc"` member; ACP requires it (`tag=True`).
"""

from __future__ import annotations

import time

from ._harness import HarnessProcess, unreadable_line

# typing costs a worker ~20 ms of start-up: import it for the type checker only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any


class RpcError(Exception):
    """The harness answered a request with an error, or did not answer in time."""

    def __init__(self, method: str, message: str, code: int | None = None) -> None:
        super().__init__(f"{method}: {message}")
        self.method = method
        self.code = code


class RpcClosed(Exception):
    """The harness's stdout ended or carried a line that is not JSON."""


class RpcPeer:
    """Requests, responses and notifications on one harness process."""

    def __init__(self, process: HarnessProcess, *, tag: bool) -> None:
        self.process = process
        self.tag = tag
        self._next = 0

    def _send(self, message: dict[str, Any]) -> None:
        if self.tag:
            message = {"jsonrpc": "2.0", **message}
        self.process.send(message)

    def request(self, method: str, params: dict[str, Any]) -> int:
        self._next += 1
        self._send({"id": self._next, "method": method, "params": params})
        return self._next

    def notify(self, method: str, params: dict[str, Any] | None = None) -> None:
        message: dict[str, Any] = {"method": method}
        if params is not None:
            message["params"] = params
        self._send(message)

    def respond(self, request_id: Any, result: dict[str, Any]) -> None:
        self._send({"id": request_id, "result": result})

    def respond_error(self, request_id: Any, code: int, message: str) -> None:
        self._send({"id": request_id, "error": {"code": code, "message": message}})

    def next_message(self, timeout: float) -> dict[str, Any] | None:
        """The next message within `timeout`, else None. Raises `RpcClosed`."""
        line = self.process.next_line(timeout)
        if line is None:
            return None
        if line.kind == "eof":
            raise RpcClosed("the harness closed its output")
        if line.kind in ("garbage", "oversized"):
            raise RpcClosed(f"the harness {unreadable_line(line)}")
        value: dict[str, Any] = line.value
        return value

    def call(
        self,
        method: str,
        params: dict[str, Any],
        timeout: float,
        other: Callable[[dict[str, Any]], None],
    ) -> dict[str, Any]:
        """Send a request; its result. Other messages meanwhile go to `other`.
        Raises `RpcError` (an error answer or no answer within `timeout`), `RpcClosed`."""
        request_id = self.request(method, params)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            message = self.next_message(0.2)
            if message is None:
                continue
            if message.get("id") == request_id and "method" not in message:
                error = message.get("error")
                if isinstance(error, dict):
                    code = error.get("code")
                    raise RpcError(
                        method,
                        str(error.get("message", error))[:2000],
                        code if isinstance(code, int) else None,
                    )
                result = message.get("result")
                return result if isinstance(result, dict) else {}
            other(message)
        raise RpcError(method, f"no answer within {timeout:g} s")
