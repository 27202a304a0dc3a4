"""A turn's structured items as worker events (the agent adapters' shared vocabulary).

Item types: message, reasoning, tool_call, command, file_change, approval_request, error,
usage (docs/agents.md). A message streams as `message.delta` events (what the Session
shows today) carrying `data.itemId`; every other item is `item.started`, `item.delta`
(text in `text`, `data.itemId`) and `item.completed` (`data.item`: the whole item). Item
fields come from harness output, so each is bounded (strings, lists, nesting) to keep a
frame far under 1 MiB whatever the harness printed.

Approvals cross the existing tool-call frames: the worker calls the Node's tool
`maia.approval` with the request and blocks (never timing out: the Node decides) until the
tool result carries the decision `{"decision": "allow"|"deny", "remember"?, "message"?}`.
"""

from __future__ import annotations

import json
import re  # json imports it already: no start-up cost

# typing costs a worker ~20 ms of start-up: import it for the type checker only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from worker_bridge._turn import Turn

APPROVAL_TOOL = "maia.approval"
MAX_FIELD_CHARS = 8192
MAX_ITEMS_IN_LIST = 64
MAX_DEPTH = 8
CHUNK_CHARS = 4096  # 4,096 characters are at most 16 KiB of UTF-8
_SURROGATES = re.compile("[\ud800-\udfff]")


def well_formed(text: str) -> str:
    """`text` with unpaired surrogates (a JSON `\\ud800` alone) as U+FFFD: UTF-8, and so
    the worker's frames, cannot carry them, and a model may write them in a tool input."""
    return _SURROGATES.sub("\ufffd", text)


def bounded(value: Any, depth: int = 0) -> Any:
    """`value` with long strings cut (marked `…[truncated]`), long lists and deep nesting cut."""
    if isinstance(value, str):
        if len(value) > MAX_FIELD_CHARS:
            return well_formed(value[:MAX_FIELD_CHARS]) + "…[truncated]"
        return well_formed(value)
    if isinstance(value, dict):
        if depth >= MAX_DEPTH:
            return "…[nested too deeply]"
        items = list(value.items())[:MAX_ITEMS_IN_LIST]
        return {well_formed(str(k)[:128]): bounded(v, depth + 1) for k, v in items}
    if isinstance(value, list):
        if depth >= MAX_DEPTH:
            return "…[nested too deeply]"
        return [bounded(v, depth + 1) for v in value[:MAX_ITEMS_IN_LIST]]
    if value is None or isinstance(value, bool | int | float):
        return value
    return well_formed(str(value)[:MAX_FIELD_CHARS])


def obj(value: Any) -> dict[str, Any]:
    """`value` if it is a JSON object, else an empty one (harness output is untrusted)."""
    return value if isinstance(value, dict) else {}


def text_of(value: Any) -> str:
    """`value` if it is a string, else the empty string."""
    return value if isinstance(value, str) else ""


class Decision:
    """A person's answer to an approval request."""

    __slots__ = ("allow", "message", "remember")

    def __init__(self, allow: bool, remember: bool = False, message: str | None = None) -> None:
        self.allow = allow
        self.remember = remember
        self.message = message


class Items:
    """Emits one turn's items; ids are `<turnId>-i<n>`."""

    def __init__(self, turn: Turn) -> None:
        self.turn = turn
        self._count = 0
        self.messages: list[str] = []  # the texts of completed message items

    def new_id(self) -> str:
        self._count += 1
        return f"{self.turn.turn_id[:100]}-i{self._count}"

    # -- messages -------------------------------------------------------------------

    def message_delta(self, item_id: str, text: str) -> None:
        text = well_formed(text)
        for start in range(0, len(text), CHUNK_CHARS):
            self.turn.event("message.delta", text[start : start + CHUNK_CHARS], {"itemId": item_id})

    def message_completed(self, item_id: str, text: str) -> None:
        text = well_formed(text)
        self.messages.append(text)
        body = text[:CHUNK_CHARS]
        self.turn.event("message.completed", body, {"itemId": item_id, "truncated": body != text})

    def message(self, text: str) -> None:
        """A whole message at once (a harness that does not stream)."""
        item_id = self.new_id()
        self.message_delta(item_id, text)
        self.message_completed(item_id, text)

    # -- other items ----------------------------------------------------------------

    def started(self, item_type: str, item_id: str | None = None, **fields: Any) -> str:
        item_id = item_id or self.new_id()
        item = {"id": item_id, "type": item_type, **bounded(fields)}
        self.turn.event("item.started", None, {"item": item})
        return item_id

    def delta(self, item_id: str, text: str, field: str = "text") -> None:
        text = well_formed(text)
        for start in range(0, len(text), CHUNK_CHARS):
            chunk = text[start : start + CHUNK_CHARS]
            self.turn.event("item.delta", chunk, {"itemId": item_id, "field": field})

    def completed(self, item_type: str, item_id: str | None = None, **fields: Any) -> str:
        item_id = item_id or self.new_id()
        item = {"id": item_id, "type": item_type, **bounded(fields)}
        self.turn.event("item.completed", None, {"item": item})
        return item_id

    def error(self, message: str, **fields: Any) -> str:
        return self.completed("error", message=message, **fields)

    def fail(self, message: str, code: str | None = None) -> None:
        """End the turn failed (`code`: its failure code, if not `turn_failed`), with an
        error item carrying the same message."""
        message = well_formed(message)
        self.error(message)
        self.turn.fail(message, code)

    # -- approvals ------------------------------------------------------------------

    def approval(
        self, kind: str, summary: str, *, can_remember: bool, **fields: Any
    ) -> Decision | None:
        """Ask the Node; None if the turn was interrupted meanwhile. A malformed or failed
        answer is a denial carrying the reason (never a silent allow)."""
        options = ["allow", "deny"]
        request = {
            "kind": kind,
            "summary": well_formed(summary[:MAX_FIELD_CHARS]),
            "options": options,
            "canRemember": can_remember,
            **bounded(fields),
        }
        item_id = self.started("approval_request", **request)
        ok, content = self.turn.call_tool(APPROVAL_TOOL, {"itemId": item_id, **request})
        if self.turn.interrupted.is_set():
            self.completed("approval_request", item_id, **request, decision="withdrawn")
            return None
        decision = _decision(ok, content)
        self.completed(
            "approval_request",
            item_id,
            **request,
            decision="allow" if decision.allow else "deny",
            remember=decision.remember,
        )
        return decision


def _decision(ok: bool, content: str) -> Decision:
    if not ok:
        return Decision(False, message=f"no decision: {content[:200]}")
    try:
        answer = json.loads(content)
    except ValueError:
        answer = None
    if not isinstance(answer, dict) or answer.get("decision") not in ("allow", "deny"):
        return Decision(False, message="no decision: the answer was not allow or deny")
    message = answer.get("message")
    return Decision(
        answer["decision"] == "allow",
        remember=answer.get("remember") is True,
        message=message[:2000] if isinstance(message, str) else None,
    )
