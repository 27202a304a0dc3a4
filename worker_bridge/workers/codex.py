"""The codex worker: one `codex app-server` per worker, one thread (conversation).

JSON-RPC over stdio: `initialize` → `initialized` → `thread/start` (or `thread/resume` when
the activation carries `conversationId`) → per prompt `turn/start` → `item/*`
notifications → `turn/completed` (completed, interrupted or failed). An interrupt is
`turn/interrupt`; approval requests (`item/commandExecution/requestApproval`,
`item/fileChange/requestApproval`) go to the Node and come back as accept, acceptForSession
(or the offered exec-policy amendment: "always allow") or decline. The thread id is
reported as a `conversation` event when the thread starts; a thread Codex no longer knows
starts a new one, said so by an error item and the event.

Initialize options: `command` (default the binary of openai-codex-cli-bin, else `codex` on
PATH), `model`, `approvalPolicy` (default `untrusted`: Codex asks before anything it does
not know to be safe), `sandbox` (default `workspace-write`), `startTimeoutMs` (60 s),
`idleTimeoutMs` (600 s). The model provider comes from `$CODEX_HOME/config.toml`.
"""

from __future__ import annotations

import os

from worker_bridge._sdk import WorkerContext
from worker_bridge._turn import Turn

from ._agent_env import bundled_codex, resolve_command
from ._codex_turn import APPROVALS, CodexTurnMapper
from ._harness import HarnessGone
from ._items import Items
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
from ._usage import RunningTotals

# typing costs a worker ~20 ms of start-up: import it for the type checker only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

VERSION = "1.0.0"
HARNESS = "codex"
# No update checks, analytics or feedback uploads: Maia pins the binary.
QUIET_CONFIG = (
    "check_for_update_on_startup=false",
    "analytics.enabled=false",
    "feedback.enabled=false",
)
IGNORED = {
    "thread/started",
    "thread/status/changed",
    "turn/started",
    "warning",
    "configWarning",
    "account/rateLimits/updated",
    "serverRequest/resolved",
    "remoteControl/status/changed",
    "item/reasoning/textDelta",
    "item/reasoning/summaryPartAdded",
    "mcpServer/startupStatus/updated",
    "thread/name/updated",
    "turn/diff/updated",
    "turn/plan/updated",
    "deprecationNotice",
    "account/updated",
    "sessionConfigured",
    "skills/changed",
}


class Codex:
    """The worker's app-server and thread."""

    def __init__(self, context: WorkerContext) -> None:
        self.context = context
        self.slot = HarnessSlot(context, HARNESS)
        self.rpc: RpcPeer | None = None
        self.thread_id: str | None = None
        self.model: str | None = context.options.get("model") or None
        self.totals = RunningTotals()
        self.remembered: set[str] = set()  # commands allowed with remember in this Session
        self.start_s = option_seconds(context, "startTimeoutMs", 60_000)
        self.idle_s = option_seconds(context, "idleTimeoutMs", 600_000)

    # -- the process and thread ---------------------------------------------------------

    def _thread_params(self) -> dict[str, Any]:
        options = self.context.options
        params: dict[str, Any] = {
            "cwd": os.getcwd(),
            "approvalPolicy": options.get("approvalPolicy") or "untrusted",
            "sandbox": options.get("sandbox") or "workspace-write",
        }
        if self.model:
            params["model"] = self.model
        return params

    def _ensure(self, turn: Turn, items: Items) -> RpcPeer:
        if self.slot.alive and self.rpc is not None:
            return self.rpc
        try:
            command = resolve_command(
                self.context.options.get("command", ""), bundled_codex(), "codex"
            )
        except FileNotFoundError as exc:
            raise LaunchFailure(f"{HARNESS}: {exc}") from exc
        argv = [command, "app-server"]
        for setting in QUIET_CONFIG:
            argv += ["-c", setting]
        rpc = RpcPeer(self.slot.start(argv), tag=False)
        self.rpc = rpc
        ignore = lambda _message: None  # noqa: E731 - nothing before the thread matters
        try:
            rpc.call(
                "initialize",
                {"clientInfo": {"name": "maia", "title": "Maia", "version": VERSION}},
                self.start_s,
                ignore,
            )
            rpc.notify("initialized")
            resume = self.thread_id or self.context.activation.get("conversationId") or None
            data: dict[str, Any] = {"harness": HARNESS, "resumed": False}
            result: dict[str, Any] | None = None
            if isinstance(resume, str):
                try:
                    result = rpc.call(
                        "thread/resume",
                        {"threadId": resume, **self._thread_params()},
                        self.start_s,
                        ignore,
                    )
                    data["resumed"] = True
                except RpcError as exc:
                    reason = f"Codex no longer knows thread {resume} ({exc}); a new one started"
                    data.update(replaced=resume, reason=reason[:2000])
                    items.error(reason, recoverable=True)
            if result is None:
                result = rpc.call("thread/start", self._thread_params(), self.start_s, ignore)
        except (RpcError, RpcClosed, HarnessGone) as exc:
            raise self.slot.fail(start_problem(self.slot, exc), launch=True) from exc
        thread = result.get("thread") or {}
        self.thread_id = str(thread.get("id") or resume)
        self.model = self.model or (
            result.get("model") if isinstance(result.get("model"), str) else None
        )
        turn.event("conversation", None, {"conversationId": self.thread_id, **data})
        return rpc

    # -- a turn ---------------------------------------------------------------------------

    def handle(self, context: WorkerContext, turn: Turn) -> None:
        items = Items(turn)
        try:
            rpc = self._ensure(turn, items)
            mapper = CodexTurnMapper(items, self.totals, self.model, self.remembered)
            self._run(turn, rpc, mapper)
        except TurnFailure as exc:
            items.fail(str(exc), exc.code)
        except (HarnessGone, RpcClosed) as exc:
            items.fail(str(self.slot.fail(f"failed during the turn: {exc}")))

    def _run(self, turn: Turn, rpc: RpcPeer, mapper: CodexTurnMapper) -> None:
        state: dict[str, Any] = {"turnId": None, "ended": None}
        params = {"threadId": self.thread_id, "input": [{"type": "text", "text": turn.text}]}
        other = lambda message: self._message(turn, rpc, mapper, message, state)  # noqa: E731
        try:
            started = rpc.call("turn/start", params, self.start_s, other)
        except RpcError as exc:
            raise TurnFailure(f"{HARNESS}: {exc}") from exc
        state["turnId"] = (started.get("turn") or {}).get("id")
        watch = TurnWatch(self.slot, turn, self.idle_s)
        while state["ended"] is None:
            if watch.interrupt_now():
                rpc.request(
                    "turn/interrupt", {"threadId": self.thread_id, "turnId": state["turnId"]}
                )
            if watch.gave_up():
                return
            message = rpc.next_message(0.1)
            if message is None:
                watch.quiet()
                continue
            self._message(turn, rpc, mapper, message, state)
            watch.heard()
        self._end(turn, mapper, state["ended"])

    def _message(
        self,
        turn: Turn,
        rpc: RpcPeer,
        mapper: CodexTurnMapper,
        message: dict[str, Any],
        state: dict[str, Any],
    ) -> None:
        method = message.get("method")
        params: dict[str, Any] = message.get("params") or {}
        params = params if isinstance(params, dict) else {}
        if not isinstance(method, str):
            return  # a late answer to one of our requests (turn/interrupt)
        if "id" in message:  # a request from the server
            if method in APPROVALS:
                rpc.respond(message["id"], mapper.approval(method, params))
            else:
                rpc.respond_error(message["id"], -32601, f"Maia does not handle {method}")
        elif method == "turn/completed":
            state["ended"] = params.get("turn") or {}
        elif method == "error":
            error = params.get("error") or {}
            if not params.get("willRetry"):
                mapper.items.error(str(error.get("message", error))[:4000])
        elif method == "thread/tokenUsage/updated" and state["turnId"] is None:
            mapper.baseline(params)
        elif not mapper.notification(method, params) and method not in IGNORED:
            turn.diagnostic({"harness": HARNESS, "unknownMethod": method[:100]})

    def _end(self, turn: Turn, mapper: CodexTurnMapper, ended: dict[str, Any]) -> None:
        usage = mapper.usage()
        status = ended.get("status")
        if status == "interrupted" and turn.interrupted.is_set():
            if mapper.ran_command:
                # Codex (0.163.0) ends the turn but leaves the command running, in a session
                # of its own: the stop ends it, and the next turn resumes the thread.
                self.slot.drop()
            return  # the SDK reports `interrupted`; the thread lives on
        if status == "completed":
            turn.complete(data={"usage": usage, "conversationId": self.thread_id})
            return
        error = ended.get("error") or {}
        reason = error.get("message") if isinstance(error, dict) else None
        message = f"{HARNESS}: turn {status}: {reason or 'no reason given'}"[:3000]
        mapper.items.fail(message)


def main() -> None:
    serve_adapter(Codex, HARNESS, VERSION)


if __name__ == "__main__":
    main()
