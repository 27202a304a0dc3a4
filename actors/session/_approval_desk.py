"""Approvals a worker asks as `maia.approval` tool calls, and their answers.

Asking writes a durable approval record (and the Session reads `waiting-approval`); a
configured timeout (`sessions.approvalTimeoutMs`) is a durable timer whose expiry answers
the worker `deny`, saying why; a client's answer (`approval.respond`, idempotent, with a
receipt) is passed to the worker's waiting tool call. The pending calls are the core's
`approvals` (withdrawn when the turn ends or the worker goes).
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any

from actors._timers import Wake
from maia.core import new_id
from storage import MutationResult, ReceiptTarget

from ._actor import SessionCore
from ._approvals import insert_approval, pending_count, read_approval, resolve
from ._attempt import TurnBuffer
from ._launcher import worker_call
from ._lifecycles import CLIENT, NODE, WORKER, SessionEvent, SessionState
from ._messages import ApprovalExpired, RespondApproval, approval_wake
from ._store import Draft, session_step, set_activity, wake


class ApprovalDesk:
    """Records the running turn's approvals, expires them and passes on the answers."""

    def __init__(self, core: SessionCore, buffer: TurnBuffer) -> None:
        self.core = core
        self.buffer = buffer

    async def ask(self, turn_id: str, call_id: str, arguments: dict[str, Any]) -> None:
        """The worker's tool call asks an approval: record it (with its expiry timer)."""
        approval_id = new_id("approval")
        timeout = self.core.config.user.sessions.approval_timeout_ms  # None: it never expires

        def write(conn: sqlite3.Connection, draft: Draft) -> None:
            self.buffer.flush_rows(conn, draft)
            expires = draft.now + timeout if timeout is not None else None
            insert_approval(conn, draft, approval_id=approval_id, turn_id=turn_id,
                            call_id=call_id, arguments=arguments, expires_ms=expires)  # fmt: skip
            if expires is not None:  # sessions.approvalTimeoutMs: a durable timer
                wake(draft, Wake(approval_wake(approval_id), at_wall_ms=expires))
            if draft.state is SessionState.RUNNING:
                session_step(conn, draft, SessionEvent.APPROVAL_REQUESTED, caller=WORKER,
                             payload={"approvalId": approval_id})  # fmt: skip
            set_activity(conn, draft, "waiting_approval")  # what session.wait's activities see

        await self.core.commit(write)
        self.core.approvals[approval_id] = (turn_id, call_id)
        self.core.notify(turn_id)

    async def expired(self, message: ApprovalExpired) -> None:
        """The configured timeout passed unanswered: the approval reads `expired` and the
        worker is told `deny` with a message saying so (an explicit, configured outcome)."""
        call = self.core.approvals.get(message.approval_id)
        handle = self.core.attempt.handle
        if call is None:
            return  # answered or withdrawn meanwhile
        timeout = self.core.config.user.sessions.approval_timeout_ms
        why = f"the approval expired unanswered after sessions.approvalTimeoutMs ({timeout} ms)"

        def write(conn: sqlite3.Connection, draft: Draft) -> None:
            resolve(conn, draft, message.approval_id, "expired", message=why)
            if draft.state is SessionState.WAITING_APPROVAL and not pending_count(
                conn, draft.session_id
            ):
                session_step(conn, draft, SessionEvent.APPROVAL_WITHDRAWN, caller=NODE,
                             payload={"approvals": [message.approval_id]})  # fmt: skip
                set_activity(conn, draft, "working")

        await self.core.commit(write)
        del self.core.approvals[message.approval_id]
        self.core.notify(call[0])
        if handle is not None:
            content = json.dumps({"decision": "deny", "message": why})
            turn_id, call_id = call

            async def answer() -> None:
                await handle.tool_result(turn_id, call_id, True, content)

            self.core.effect("approval-expired", worker_call("tool_result", answer))

    async def respond(self, message: RespondApproval) -> MutationResult:
        """Answer a pending approval (idempotent by commandId, with a receipt) and pass the
        decision to the worker's waiting tool call. Raises `approval_not_pending`."""
        approval_id = message.approval_id
        state = "allowed" if message.decision == "allow" else "denied"

        def apply(conn: sqlite3.Connection, draft: Draft) -> Any:
            resolve(conn, draft, approval_id, state, remember=message.remember,
                    message=message.message)  # fmt: skip
            wake(draft, Wake(approval_wake(approval_id), cancel=True))
            draft.targets.append(ReceiptTarget("approval", approval_id, "updated", 1, 2))
            waiting = draft.state is SessionState.WAITING_APPROVAL
            if waiting and pending_count(conn, draft.session_id) == 0:
                prior = draft.revision
                session_step(conn, draft, SessionEvent.APPROVAL_RESOLVED, caller=CLIENT,
                             payload={"approvalId": approval_id})  # fmt: skip
                self.core.session_target(draft, prior)
                set_activity(conn, draft, "working")
            return {"approval": read_approval(conn, approval_id)}

        result = await self.core.mutate("approval.respond", message.command, apply)
        call = self.core.approvals.pop(approval_id, None)
        handle = self.core.attempt.handle
        if result.delivery == "new" and call is not None and handle is not None:
            turn_id, call_id = call
            answer: dict[str, Any] = {"decision": message.decision}
            if message.remember:
                answer["remember"] = True
            if message.message:
                answer["message"] = message.message
            content = json.dumps(answer)

            async def answer_call() -> None:
                await handle.tool_result(turn_id, call_id, True, content)

            self.core.effect("approval-answer", worker_call("tool_result", answer_call))
        self.core.notify(*(call[:1] if call else ()))
        return result
