"""The acp worker: any Agent Client Protocol agent (`gemini --acp`, `goose acp`, …).

Speaks the protocol directly (JSON-RPC 2.0 over the agent's stdio; stdlib only, so the
worker starts fast): `initialize`, then `session/new`, or `session/load` when the
activation carries `conversationId` and the agent advertises `loadSession`; per prompt
`session/prompt` (its answer's `stopReason` ends the turn) with `session/update`
notifications as items; `session/cancel` on interrupt; `session/request_permission` as an
approval request. The agent's file-system and terminal requests are refused: Maia offers
neither capability. An id the agent cannot load starts a new session, said so by an error
item and the `conversation` event.

Initialize options: `argv` (JSON array, required: the agent's command line),
`startTimeoutMs` (60 s), `idleTimeoutMs` (600 s).
"""

from __future__ import annotations

import json
import os

from worker_bridge._sdk import WorkerContext
from worker_bridge._turn import Turn

from ._acp_turn import AcpTurnMapper, running_cost
from ._harness import HarnessGone
from ._items import Items, obj
from ._jsonrpc import RpcClosed, RpcError, RpcPeer
from ._slot import (
    HarnessSlot,
    LaunchFailure,
    TurnFailure,
    TurnWatch,
    option_seconds,
    serve_adapter,
    start_problem,
)

# typing costs a worker ~20 ms of start-up: import it for the type checker only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

VERSION = "1.0.0"
HARNESS = "acp"
PROTOCOL_VERSION = 1


def agent_argv(context: WorkerContext) -> list[str]:
    """The configured `argv`. Raises `TurnFailure` when it is missing or not a string list."""
    try:
        argv = json.loads(context.options.get("argv") or "null")
    except ValueError:
        argv = None
    if not isinstance(argv, list) or not argv or not all(isinstance(a, str) for a in argv):
        raise LaunchFailure("acp: the executor needs `argv` (the agent's command line)")
    return argv


class AcpClient:
    """The worker's agent process and session."""

    def __init__(self, context: WorkerContext) -> None:
        self.context = context
        self.slot = HarnessSlot(context, HARNESS)
        self.rpc: RpcPeer | None = None
        self.session_id: str | None = None
        # The session's running cost as the agent last reported it (micro-units, currency);
        # None when unknown (a loaded session whose agent did not say).
        self.cost: tuple[int, str] | None = None
        self.start_s = option_seconds(context, "startTimeoutMs", 60_000)
        self.idle_s = option_seconds(context, "idleTimeoutMs", 600_000)

    def _ensure(self, turn: Turn, items: Items) -> RpcPeer:
        if self.slot.alive and self.rpc is not None:
            return self.rpc
        rpc = RpcPeer(self.slot.start(agent_argv(self.context)), tag=True)
        self.rpc = rpc
        ignore = lambda _message: None  # noqa: E731
        reported: list[tuple[int, str]] = []

        def replayed(message: dict[str, Any]) -> None:  # the history a load replays
            update = obj(obj(message.get("params")).get("update"))
            cost = running_cost(update)
            if cost is not None:
                reported.append(cost)

        capabilities = {"fs": {"readTextFile": False, "writeTextFile": False}, "terminal": False}
        resume = self.session_id or self.context.activation.get("conversationId") or None
        data: dict[str, Any] = {"harness": HARNESS, "resumed": False}
        params = {"cwd": os.getcwd(), "mcpServers": []}
        try:
            hello = rpc.call(
                "initialize",
                {
                    "protocolVersion": PROTOCOL_VERSION,
                    "clientCapabilities": capabilities,
                    "clientInfo": {"name": "maia", "version": VERSION},
                },
                self.start_s,
                ignore,
            )
            can_load = bool((hello.get("agentCapabilities") or {}).get("loadSession"))
            session: str | None = None
            if isinstance(resume, str):
                why = "the agent cannot load sessions"
                if can_load:
                    try:
                        rpc.call(
                            "session/load", {**params, "sessionId": resume}, self.start_s, replayed
                        )
                        session, data["resumed"] = resume, True
                        self.cost = reported[-1] if reported else None
                    except RpcError as exc:
                        why = str(exc)
                if session is None:
                    reason = (
                        f"the agent could not resume session {resume} ({why}); a new one started"
                    )
                    data.update(replaced=resume, reason=reason[:2000])
                    items.error(reason, recoverable=True)
            if session is None:
                session = str(
                    rpc.call("session/new", params, self.start_s, ignore).get("sessionId")
                )
                self.cost = (0, "")  # a new session has cost nothing yet
        except (RpcError, RpcClosed, HarnessGone) as exc:
            raise self.slot.fail(start_problem(self.slot, exc), launch=True) from exc
        self.session_id = session
        turn.event("conversation", None, {"conversationId": session, **data})
        return rpc

    def handle(self, context: WorkerContext, turn: Turn) -> None:
        items = Items(turn)
        try:
            rpc = self._ensure(turn, items)
            mapper = AcpTurnMapper(items, self.cost)
            try:
                self._run(turn, rpc, mapper)
            finally:
                self.cost = mapper.cost
        except TurnFailure as exc:
            items.fail(str(exc), exc.code)
        except (HarnessGone, RpcClosed) as exc:
            items.fail(str(self.slot.fail(f"failed during the turn: {exc}")))

    def _run(self, turn: Turn, rpc: RpcPeer, mapper: AcpTurnMapper) -> None:
        prompt = rpc.request(
            "session/prompt",
            {"sessionId": self.session_id, "prompt": [{"type": "text", "text": turn.text}]},
        )
        watch = TurnWatch(self.slot, turn, self.idle_s)
        while True:
            if watch.interrupt_now():
                rpc.notify("session/cancel", {"sessionId": self.session_id})
            if watch.gave_up():
                return
            message = rpc.next_message(0.1)
            if message is None:
                watch.quiet()
                continue
            watch.heard()
            if message.get("id") == prompt and "method" not in message:
                mapper.close()
                self._end(turn, mapper, message)
                return
            self._message(turn, rpc, mapper, message)
            watch.heard()

    def _message(
        self, turn: Turn, rpc: RpcPeer, mapper: AcpTurnMapper, message: dict[str, Any]
    ) -> None:
        method = message.get("method")
        params: dict[str, Any] = message.get("params") or {}
        params = params if isinstance(params, dict) else {}
        if not isinstance(method, str):
            return
        if "id" in message:
            if method == "session/request_permission":
                rpc.respond(message["id"], mapper.permission(params))
            else:
                rpc.respond_error(message["id"], -32601, f"Maia does not offer {method}")
        elif method == "session/update":
            update: dict[str, Any] = params.get("update") or {}
            update = update if isinstance(update, dict) else {}
            if not mapper.update(update):
                turn.diagnostic(
                    {"harness": HARNESS, "unknownUpdate": str(update.get("sessionUpdate"))[:100]}
                )
        else:
            turn.diagnostic({"harness": HARNESS, "unknownMethod": method[:100]})

    def _end(self, turn: Turn, mapper: AcpTurnMapper, response: dict[str, Any]) -> None:
        error = response.get("error")
        if isinstance(error, dict):
            message = f"{HARNESS}: session/prompt failed: {str(error.get('message', error))[:2000]}"
            mapper.items.fail(message)
            return
        result: dict[str, Any] = response.get("result") or {}
        result = result if isinstance(result, dict) else {}
        usage = mapper.usage(result)
        stop = result.get("stopReason")
        if turn.interrupted.is_set():
            # The SDK reports `interrupted`; the session lives on. Whatever the stop reason:
            # an agent told `cancelled` for its permission request may end the prompt
            # `end_turn` before it reads session/cancel, and the interrupt still happened.
            return
        if stop in ("end_turn", "max_tokens", "max_turn_requests"):
            turn.complete(
                data={"usage": usage, "conversationId": self.session_id, "stopReason": stop}
            )
            return
        message = f"{HARNESS}: the agent stopped: {stop}"
        mapper.items.fail(message)


def main() -> None:
    serve_adapter(AcpClient, HARNESS, VERSION)


if __name__ == "__main__":
    main()
