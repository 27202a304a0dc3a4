"""The agent workers' own events on a running turn: the harness conversation, structured
items, per-turn usage, and approvals asked as `maia.approval` tool calls.

- `conversation`: the harness's conversation id is stored with the Session (the next launch
  passes it back as `activation.conversationId`); a `replaced` one is recorded as the event
  `session.conversation.replaced`.
- `item.started` / `item.delta`: published live (never stored per delta).
- `item.completed`: stored with the turn (kind, a text, the item's fields as `data`); a
  `usage` item also sets the turn's usage and adds it to the Session's totals.
- `tool-call` of `maia.approval`: an approval (`_approval_desk`); any other tool is
  refused at once (`tool_unavailable`).
"""

from __future__ import annotations

import json
import sqlite3
from typing import Any, Final

import orjson

from maia.core import new_id
from supervision.workers import TurnEvent as WorkerEvent
from supervision.workers import WorkerHandle

from . import _sql as sql
from . import _sql_turns as turns_sql
from ._actor import SessionCore
from ._approval_desk import ApprovalDesk
from ._approvals import APPROVAL_TOOL
from ._attempt import TurnBuffer
from ._items import items_unknown
from ._launcher import worker_call
from ._sql_turns import LAST_ITEM_PLACE
from ._store import Draft, emit
from ._usage import add_usage, turn_usage
from ._usage_limits import overrun_message, token_overrun

MAX_DATA_BYTES: Final = 65_536
ITEM_KINDS: Final = frozenset(
    ("message", "reasoning", "tool_call", "command", "file_change", "approval_request", "error",
     "usage")
)  # fmt: skip
TEXT_FIELDS: Final = ("text", "message", "command", "summary", "name")


def _item_text(item: dict[str, Any]) -> str:
    """The human line of a structured item: its text, message, command, summary or name."""
    for key in TEXT_FIELDS:
        value = item.get(key)
        if isinstance(value, str) and value:
            return value[:8192]
    return ""


def _item_data(item: dict[str, Any]) -> str:
    data = orjson.dumps({k: v for k, v in item.items() if k not in ("id", "type")})
    if len(data) > MAX_DATA_BYTES:
        return orjson.dumps({"truncated": True, "bytes": len(data)}).decode()
    return data.decode()


def _refusal(name: object) -> str:
    return json.dumps({"code": "tool_unavailable",
                       "message": f"the Node hosts no tool {str(name)[:128]!r}"})  # fmt: skip


class AgentEvents:
    """An agent worker's events on the running turn, and the approvals it asks."""

    def __init__(self, core: SessionCore, buffer: TurnBuffer, desk: ApprovalDesk) -> None:
        self.core = core
        self.buffer = buffer
        self.desk = desk  # a `maia.approval` tool call is its

    async def agent_event(self, handle: WorkerHandle, event: WorkerEvent) -> None:
        data = event.data or {}
        match event.kind:
            case "conversation":
                await self._conversation(data)
            case "item.started" | "item.delta":
                self._live_structured(event, data)
            case "item.completed":
                await self._item_completed(event.turn_id, data.get("item"))
            case "tool-call":
                await self._tool_call(handle, event.turn_id, data)

    def _live_structured(self, event: WorkerEvent, data: dict[str, Any]) -> None:
        if self.core.ctx.live is None:
            return
        found = data.get("item")
        item: dict[str, Any] = found if isinstance(found, dict) else {}
        item_id = str(item.get("id") or data.get("itemId") or "")
        kind = str(item.get("type") or "")
        text = event.text or (_item_text(item) if item else "")
        self.core.ctx.live(event.kind, self.core.session_id, event.turn_id, item_id, kind, text)

    async def _conversation(self, data: dict[str, Any]) -> None:
        conversation_id = data.get("conversationId")
        if not isinstance(conversation_id, str) or not conversation_id:
            return
        keys = ("conversationId", "harness", "resumed", "replaced", "reason")
        body: dict[str, Any] = {k: data[k] for k in keys if k in data}

        def write(conn: sqlite3.Connection, draft: Draft) -> None:
            if sql.set_conversation(conn, draft.session_id, conversation_id[:200]):
                emit(conn, draft, "session.conversation", body)
            if data.get("replaced"):
                emit(conn, draft, "session.conversation.replaced", dict(body))  # its own

        await self.core.commit(write)

    async def _item_completed(self, turn_id: str, item: Any) -> None:
        if not isinstance(item, dict) or not isinstance(item.get("type"), str):
            return
        kind = item["type"][:32]
        if kind not in ITEM_KINDS:  # a type this Node does not know: kept as a diagnostic
            item = {"type": "error", "message": f"unknown item type {kind!r}", "item": item}
            kind = "error"
        if not self.buffer.place_left():
            self.past_item_limit(turn_id)
            return
        seq, item_id = self.buffer.next_seq(), new_id("item")

        def write(conn: sqlite3.Connection, draft: Draft) -> None:
            self.buffer.flush_rows(conn, draft)  # what streamed before it keeps its place
            turns_sql.insert_item(conn, item_id, turn_id, seq, kind, _item_text(item), "completed",
                            draft.now, _item_data(item))  # fmt: skip
            items_unknown(draft, turn_id)  # its views are read back (data, usage)
            if kind == "usage":
                add_usage(conn, draft, turn_id, item)
            emit(conn, draft, "item.completed",
                 {"turnId": turn_id, "itemId": item_id, "kind": kind})  # fmt: skip

        await self.core.commit(write)
        self._live_structured(WorkerEvent(turn_id, "item.completed"), {"item": item})
        self.core.notify(turn_id)
        if kind == "usage":
            self._enforce_tokens(turn_id, turn_usage(item))

    def past_item_limit(self, turn_id: str) -> None:
        """Interrupt a turn with no place left for another item (`LAST_ITEM_PLACE`): it ends
        failed `item_limit_exceeded` (`_end`), and what it sends after that is not stored."""
        message = f"the turn passed {LAST_ITEM_PLACE - 1} items: interrupted"
        self._interrupt_over(turn_id, "item_limit_exceeded", message)

    def _enforce_tokens(self, turn_id: str, usage: dict[str, Any]) -> None:
        """Interrupt a turn past a per-activation token limit; it ends failed (`_end`)."""
        reason = token_overrun(usage, self.core.config.limits)
        if reason is not None:
            self._interrupt_over(turn_id, reason, overrun_message(reason, self.core.config.limits))

    def _interrupt_over(self, turn_id: str, reason: str, message: str) -> None:
        handle = self.core.attempt.handle
        if self.core.attempt.over_limit is not None or self.core.queue.active != turn_id:
            return
        self.core.attempt.over_limit = (turn_id, reason, message)
        if handle is not None:
            self.core.effect(
                "interrupt", worker_call("interrupt", lambda: handle.interrupt(turn_id))
            )

    async def _tool_call(self, handle: WorkerHandle, turn_id: str, data: dict[str, Any]) -> None:
        call_id, name, arguments = data.get("callId"), data.get("name"), data.get("arguments")
        if not isinstance(call_id, str):
            return
        if name != APPROVAL_TOOL or not isinstance(arguments, dict):
            answer = _refusal(name)

            async def refuse() -> None:
                await handle.tool_result(turn_id, call_id, False, answer)

            self.core.effect("tool-refusal", worker_call("tool_result", refuse))
            return
        await self.desk.ask(turn_id, call_id, arguments)
