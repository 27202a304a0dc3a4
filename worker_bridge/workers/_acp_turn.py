"""One ACP prompt turn: `session/update` notifications mapped to Maia items.

agent_message_chunk → message, agent_thought_chunk → reasoning (consecutive chunks form one
item; another kind of update closes it), tool_call/tool_call_update → command (kind
`execute`), file_change (kind `edit`, with the diff content) or tool_call. A
`session/request_permission` becomes an approval request; the answer picks the agent's
own option of the matching kind (`allow_always` for "remember"). A `usage_update`'s cost is
the session's running total: the turn's `costMicros` is its difference from the total before
the turn (0 for a new session, else the last total the agent reported, while loading too).
"""

from __future__ import annotations

from ._items import Decision, Items, obj
from ._usage import count, usage_item, usd_to_micros

# typing costs a worker ~20 ms of start-up: import it for the type checker only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

TOOL_KINDS = {
    "execute": "command",
    "edit": "file_change",
    "delete": "file_change",
    "move": "file_change",
}
SILENT = {
    "plan",
    "available_commands_update",
    "current_mode_update",
    "user_message_chunk",
    "session_info_update",
    "config_option_update",
}
DONE = {"completed", "failed"}


def running_cost(update: dict[str, Any]) -> tuple[int, str] | None:
    """A `usage_update`'s running session cost as (micro-units, currency), else None."""
    if update.get("sessionUpdate") != "usage_update":
        return None
    cost = obj(update.get("cost"))
    micros = usd_to_micros(cost.get("amount"))
    return None if micros is None else (micros, str(cost.get("currency", ""))[:8])


def _content_text(content: Any) -> str:
    parts = []
    for entry in content if isinstance(content, list) else []:
        inner = entry.get("content") if isinstance(entry, dict) else None
        if isinstance(inner, dict) and isinstance(inner.get("text"), str):
            parts.append(inner["text"])
    return "".join(parts)


def _diffs(content: Any) -> list[dict[str, Any]]:
    return [
        {
            "path": e.get("path"),
            "kind": "update" if e.get("oldText") else "add",
            "diff": e.get("newText"),
        }
        for e in (content if isinstance(content, list) else [])
        if isinstance(e, dict) and e.get("type") == "diff"
    ]


class AcpTurnMapper:
    """Maps one prompt's updates; `usage(response)` emits the usage item at the end.
    `cost` is the session's running cost: the one before the turn (None: unknown), then the
    last the agent reported."""

    def __init__(self, items: Items, cost: tuple[int, str] | None = None) -> None:
        self.items = items
        self.open: tuple[str, str, list[str]] | None = None  # (kind, item id, texts)
        self.tools: dict[str, dict[str, Any]] = {}
        self.cost_before = cost
        self.cost = cost

    def update(self, update: dict[str, Any]) -> bool:
        """Apply one `session/update`; False if its kind is unknown."""
        kind = update.get("sessionUpdate")
        if kind in ("agent_message_chunk", "agent_thought_chunk"):
            content = update.get("content") or {}
            text = content.get("text") if isinstance(content, dict) else None
            if isinstance(text, str):
                self._chunk("message" if kind == "agent_message_chunk" else "reasoning", text)
            return True
        self.close()
        if kind == "tool_call":
            self._tool(update, start=True)
        elif kind == "tool_call_update":
            self._tool(update, start=False)
        elif kind == "usage_update":
            self.cost = running_cost(update) or self.cost
        elif kind not in SILENT:
            return False
        return True

    def _chunk(self, kind: str, text: str) -> None:
        if self.open is None or self.open[0] != kind:
            self.close()
            item_id = self.items.new_id() if kind == "message" else self.items.started("reasoning")
            self.open = (kind, item_id, [])
        _, item_id, texts = self.open
        texts.append(text)
        if kind == "message":
            self.items.message_delta(item_id, text)
        else:
            self.items.delta(item_id, text)

    def close(self) -> None:
        """End the open message or reasoning item."""
        if self.open is None:
            return
        kind, item_id, texts = self.open
        self.open = None
        if kind == "message":
            self.items.message_completed(item_id, "".join(texts))
        else:
            self.items.completed("reasoning", item_id, text="".join(texts))

    def _tool(self, update: dict[str, Any], *, start: bool) -> None:
        call_id = str(update.get("toolCallId", ""))
        known = self.tools.get(call_id)
        if known is None:
            item_type = TOOL_KINDS.get(str(update.get("kind")), "tool_call")
            known = {"type": item_type, "fields": {"toolCallId": call_id}}
            self.tools[call_id] = known
            start = True
        fields = known["fields"]
        for name in ("title", "kind", "rawInput", "rawOutput", "status"):
            if update.get(name) is not None:
                fields[name] = update[name]
        if known["type"] == "file_change" and _diffs(update.get("content")):
            fields["changes"] = _diffs(update.get("content"))
        if update.get("content"):
            fields["output"] = _content_text(update["content"])
        if start:
            known["id"] = self.items.started(known["type"], **fields)
        if fields.get("status") in DONE:
            self.items.completed(known["type"], known["id"], **fields)
            self.tools.pop(call_id, None)

    def permission(self, params: dict[str, Any]) -> dict[str, Any]:
        """Ask the Node; the `session/request_permission` result for the agent."""
        self.close()
        options = [o for o in params.get("options") or [] if isinstance(o, dict)]
        by_kind = {str(o.get("kind")): o.get("optionId") for o in options}
        call = obj(params.get("toolCall"))
        kind = TOOL_KINDS.get(str(call.get("kind")), "tool")
        kind = "tool" if kind == "tool_call" else kind
        summary = str(call.get("title") or call.get("toolCallId") or "a tool call")
        decision: Decision | None = self.items.approval(
            kind,
            summary,
            can_remember="allow_always" in by_kind,
            toolCall=call,
            agentOptions=[
                {"optionId": o.get("optionId"), "kind": o.get("kind"), "name": o.get("name")}
                for o in options
            ],
        )
        if decision is None:
            return {"outcome": {"outcome": "cancelled"}}
        if decision.allow:
            wanted = (
                ("allow_always", "allow_once")
                if decision.remember
                else ("allow_once", "allow_always")
            )
        else:
            wanted = ("reject_once", "reject_always")
        for choice in wanted:
            if by_kind.get(choice):
                return {"outcome": {"outcome": "selected", "optionId": by_kind[choice]}}
        return {"outcome": {"outcome": "cancelled"}}  # no option of that kind: never allow

    def usage(self, response: dict[str, Any]) -> dict[str, Any]:
        usage = obj(response.get("usage"))
        turn: dict[str, int | None] = {
            "inputTokens": count(usage.get("inputTokens")) if usage else None,
            "outputTokens": count(usage.get("outputTokens")) if usage else None,
            "cacheReadTokens": count(usage.get("cachedReadTokens")) if usage else None,
            "cacheWriteTokens": count(usage.get("cachedWriteTokens")) if usage else None,
        }
        fields = usage_item(turn, None)
        if self.cost is not None and self.cost is not self.cost_before:  # reported this turn
            total, currency = self.cost
            fields["sessionCostMicros"], fields["currency"] = total, currency
            before = self.cost_before
            if before is not None and (before[0] == 0 or before[1] == currency):
                fields["costMicros"] = max(0, total - before[0])
        self.items.completed("usage", **fields)
        return fields
