"""The claude-code worker: one long-lived Claude Code CLI per worker, one conversation.

Runs `claude -p --input-format stream-json --output-format stream-json --verbose
--permission-prompt-tool stdio --include-partial-messages` and drives it by its control
protocol: `initialize` once, a `user` line per prompt, the control `interrupt`, and answers
to `can_use_tool` (an approval request to the Node). The conversation id is chosen here
(`--session-id=<uuid>`) before the first turn runs and reported as a `conversation` event;
an activation carrying `conversationId` resumes it (`--resume=<id>`), and an id the CLI no
longer knows starts a fresh conversation, said so by an error item and the event. A CLI
that exits, hangs past its bounds or prints a non-JSON line fails the turn (with its stderr
tail) and is restarted on the next turn, resuming the same conversation.

Initialize options: `command` (the binary; default the one bundled with claude-agent-sdk,
else `claude` on PATH), `model`, `permissionMode`, `startTimeoutMs` (60 s), `idleTimeoutMs`
(no output for this long fails the turn; 600 s).
"""

from __future__ import annotations

import time
import uuid

from worker_bridge._sdk import WorkerContext
from worker_bridge._turn import Turn

from ._agent_env import bundled_claude, resolve_command
from ._claude_turn import IGNORED, ClaudeTurnMapper
from ._harness import HarnessGone, HarnessProcess, unreadable_line
from ._items import Items
from ._slot import (
    EXITED_AT_START,
    HarnessSlot,
    LaunchFailure,
    TurnFailure,
    TurnWatch,
    option_seconds,
    serve_adapter,
)
from ._usage import RunningTotals

# typing costs a worker ~20 ms of start-up: import it for the type checker only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

VERSION = "1.0.0"
HARNESS = "claude-code"
# The CLI as a long-lived stream-json peer, approvals asked over stdio (also the bench's).
STREAM_FLAGS = (
    "-p",
    "--input-format",
    "stream-json",
    "--output-format",
    "stream-json",
    "--verbose",
    "--permission-prompt-tool",
    "stdio",
    "--include-partial-messages",
)
UNKNOWN_CONVERSATION = "No conversation found"


class UnknownConversation(Exception):
    pass


def user_line(text: str) -> dict[str, Any]:
    """The stream-json line that sends one prompt (also the bench's)."""
    return {
        "type": "user",
        "session_id": "",
        "parent_tool_use_id": None,
        "message": {"role": "user", "content": text},
    }


class ClaudeCode:
    """The worker's one harness process and conversation."""

    def __init__(self, context: WorkerContext) -> None:
        self.context = context
        self.slot = HarnessSlot(context, HARNESS)
        self.conversation_id: str | None = None
        self.totals = RunningTotals()
        self._requests = 0
        self.start_s = option_seconds(context, "startTimeoutMs", 60_000)
        self.idle_s = option_seconds(context, "idleTimeoutMs", 600_000)

    # -- the process ------------------------------------------------------------------

    def argv(self, resume: str | None, fresh: str) -> list[str]:
        options = self.context.options
        command = resolve_command(options.get("command", ""), bundled_claude(), "claude")
        argv = [command, *STREAM_FLAGS]
        if options.get("permissionMode"):
            argv += ["--permission-mode", options["permissionMode"]]
        if options.get("model"):
            argv += ["--model", options["model"]]
        # The `=` form: an id can never be read as a flag.
        argv.append(f"--resume={resume}" if resume else f"--session-id={fresh}")
        return argv

    def _start(self, resume: str | None) -> str:
        """Start the CLI and initialize it; returns the conversation id."""
        fresh = str(uuid.uuid4())
        try:
            argv = self.argv(resume, fresh)
        except FileNotFoundError as exc:
            raise LaunchFailure(f"{HARNESS}: {exc}") from exc
        process = self.slot.start(argv)
        try:
            request_id = self._control({"subtype": "initialize"})
        except HarnessGone:  # it exited before reading a line
            request_id = ""
        deadline = time.monotonic() + self.start_s
        while time.monotonic() < deadline:
            line = process.next_line(0.2)
            if line is None:
                continue
            if line.kind == "eof" or (line.kind == "json" and line.value.get("type") == "result"):
                if resume and UNKNOWN_CONVERSATION in f"{line.value} {process.stderr_tail()}":
                    self.slot.drop()
                    raise UnknownConversation(resume)
                raise self.slot.fail(EXITED_AT_START, launch=True)
            if line.kind == "json" and line.value.get("type") == "control_response":
                response = line.value.get("response") or {}
                if response.get("request_id") == request_id:
                    if response.get("subtype") == "error":
                        what = f"refused initialize: {response.get('error')}"
                        raise self.slot.fail(what, launch=True)
                    return resume or fresh
        raise self.slot.fail(f"did not initialize within {self.start_s:g} s", launch=True)

    def _ensure(self, turn: Turn, items: Items) -> None:
        if self.slot.alive:
            return
        resume = self.conversation_id or self.context.activation.get("conversationId") or None
        resume = resume if isinstance(resume, str) else None
        data: dict[str, Any] = {"harness": HARNESS}
        try:
            conversation = self._start(resume)
            data["resumed"] = resume is not None
        except UnknownConversation:
            conversation = self._start(None)
            reason = f"Claude Code no longer knows conversation {resume}; a new one started"
            data.update(resumed=False, replaced=resume, reason=reason)
            items.error(reason, recoverable=True)
        self.conversation_id = conversation
        turn.event("conversation", None, {"conversationId": conversation, **data})

    def _control(self, request: dict[str, Any]) -> str:
        assert self.slot.process is not None
        self._requests += 1
        request_id = f"maia_{self._requests}"
        self.slot.process.send(
            {"type": "control_request", "request_id": request_id, "request": request}
        )
        return request_id

    # -- a turn -----------------------------------------------------------------------

    def handle(self, context: WorkerContext, turn: Turn) -> None:
        items = Items(turn)
        try:
            self._ensure(turn, items)
            process = self.slot.process
            assert process is not None
            process.send(user_line(turn.text))
            self._run(turn, items, process)
        except TurnFailure as exc:
            items.fail(str(exc), exc.code)
        except HarnessGone:
            items.fail(str(self.slot.fail("stopped reading its input")))

    def _run(self, turn: Turn, items: Items, process: HarnessProcess) -> None:
        mapper = ClaudeTurnMapper(items, self.totals)
        watch = TurnWatch(self.slot, turn, self.idle_s)
        while True:
            if watch.interrupt_now():
                self._control({"subtype": "interrupt"})
            if watch.gave_up():  # it would not stop the turn: the next turn resumes afresh
                return
            line = process.next_line(0.1)
            if line is None:
                watch.quiet()
                continue
            watch.heard()
            if line.kind == "eof":
                raise self.slot.fail("exited during the turn")
            if line.kind in ("garbage", "oversized"):
                raise self.slot.fail(unreadable_line(line))
            if self._line(turn, mapper, line.value):
                return
            watch.heard()  # an approval may have waited for a person

    def _line(self, turn: Turn, mapper: ClaudeTurnMapper, message: dict[str, Any]) -> bool:
        """Apply one line; True once the turn has ended."""
        kind = message.get("type")
        if kind == "stream_event":
            mapper.stream_event(message.get("event"))
        elif kind == "assistant":
            mapper.assistant(message.get("message"))
        elif kind == "user":
            mapper.tool_results(message)
        elif kind == "control_request":
            self._answer(mapper, message)
        elif kind == "result":
            self._result(turn, mapper, message)
            return True
        elif kind == "control_cancel_request" or kind in IGNORED:
            pass
        else:
            turn.diagnostic({"harness": HARNESS, "unknownType": str(kind)[:100]})
        return False

    def _answer(self, mapper: ClaudeTurnMapper, message: dict[str, Any]) -> None:
        assert self.slot.process is not None
        request = message.get("request") or {}
        request_id = message.get("request_id")
        if request.get("subtype") == "can_use_tool":
            body = {
                "subtype": "success",
                "request_id": request_id,
                "response": mapper.approval_answer(request),
            }
        else:
            body = {
                "subtype": "error",
                "request_id": request_id,
                "error": f"Maia does not handle {request.get('subtype')!r}",
            }
        self.slot.process.send({"type": "control_response", "response": body})

    def _result(self, turn: Turn, mapper: ClaudeTurnMapper, result: dict[str, Any]) -> None:
        usage = mapper.usage(result)
        if isinstance(result.get("session_id"), str) and result["session_id"]:
            self.conversation_id = result["session_id"]
        ended = str(result.get("terminal_reason") or "")
        if turn.interrupted.is_set() and (ended.startswith("aborted") or result.get("is_error")):
            return  # the SDK reports `interrupted`; the conversation lives on
        if result.get("is_error") or result.get("subtype") != "success":
            errors = result.get("errors")
            reason = "; ".join(map(str, errors)) if isinstance(errors, list) and errors else ""
            reason = reason or str(result.get("result") or result.get("subtype") or "")
            status = result.get("api_error_status")
            where = f" (API status {status})" if status else ""
            message = f"{HARNESS}: {ended or 'error'}{where}: {reason}"[:3000]
            mapper.items.fail(message)
            return
        turn.complete(
            data={
                "usage": usage,
                "conversationId": self.conversation_id,
                "stopReason": result.get("stop_reason"),
            }
        )


def main() -> None:
    serve_adapter(ClaudeCode, HARNESS, VERSION)


if __name__ == "__main__":
    main()
