"""One Codex app-server turn: `item/*` notifications mapped to Maia items (HARNESSES.md).

agentMessage → message (streamed by `item/agentMessage/delta`), reasoning → reasoning
(visible summaries only: raw reasoning text is not forwarded), commandExecution → command
(`outputDelta` streams its output), fileChange → file_change, mcpToolCall, webSearch and
other tool items → tool_call. `thread/tokenUsage/updated` carries the thread's running total
(and `last`: one model request); the turn's usage is the difference of totals.
"""

from __future__ import annotations

import json

from ._items import Decision, Items, text_of
from ._usage import RunningTotals, count, usage_item

# typing costs a worker ~20 ms of start-up: import it for the type checker only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

TOOL_ITEMS = {"mcpToolCall", "webSearch", "dynamicToolCall", "collabToolCall", "imageView"}
SILENT_ITEMS = {"userMessage", "plan", "contextCompaction", "hookPrompt"}
APPROVALS = {
    "item/commandExecution/requestApproval": "command",
    "item/fileChange/requestApproval": "file_change",
    "item/permissions/requestApproval": "tool",
}


def _tokens(usage: Any) -> dict[str, int | None]:
    usage = usage if isinstance(usage, dict) else {}
    return {
        "inputTokens": count(usage.get("inputTokens")),
        "outputTokens": count(usage.get("outputTokens")),
        "cacheReadTokens": count(usage.get("cachedInputTokens")),
        "cacheWriteTokens": count(usage.get("cacheWriteInputTokens")),
        "costMicros": None,
    }


def _changes(item: dict[str, Any]) -> list[dict[str, Any]]:
    changes = []
    for change in item.get("changes") or []:
        if isinstance(change, dict):
            kind = change.get("kind")
            kind = kind.get("type") if isinstance(kind, dict) else kind
            changes.append({"path": change.get("path"), "kind": kind, "diff": change.get("diff")})
    return changes


class CodexTurnMapper:
    """Maps one turn's notifications; `usage()` emits the usage item at the end."""

    def __init__(
        self,
        items: Items,
        totals: RunningTotals,
        model: str | None,
        remembered: set[str] | None = None,
    ) -> None:
        self.items = items
        self.totals = totals
        self.model = model
        self.remembered = remembered if remembered is not None else set()  # the worker's
        self.ids: dict[str, str] = {}  # Codex item id -> Maia item id
        self.ran_command = False  # a commandExecution started in this turn
        self.total: dict[str, int | None] | None = None
        self.lasts: dict[str, int] = {}

    def notification(self, method: str, params: dict[str, Any]) -> bool:
        """Apply one notification; False if the method is not one this mapper knows."""
        if method == "item/started":
            self._started(params.get("item") or {})
        elif method == "item/completed":
            self._completed(params.get("item") or {})
        elif method == "item/agentMessage/delta":
            self._delta(params, self.items.message_delta)
        elif method == "item/reasoning/summaryTextDelta":
            self._delta(params, self.items.delta)
        elif method == "item/commandExecution/outputDelta":
            self._delta(params, lambda item_id, text: self.items.delta(item_id, text, "output"))
        elif method == "thread/tokenUsage/updated":
            usage = params.get("tokenUsage") or {}
            self.total = _tokens(usage.get("total"))
            for name, value in _tokens(usage.get("last")).items():
                self.lasts[name] = self.lasts.get(name, 0) + (value or 0)
        else:
            return False
        return True

    def baseline(self, params: dict[str, Any]) -> None:
        """A resumed thread reports its restored total before the turn starts (verified,
        0.163.0): the starting point of this turn's difference, not part of it."""
        total = _tokens((params.get("tokenUsage") or {}).get("total"))
        self.totals.last = {k: v for k, v in total.items() if v is not None}

    def _delta(self, params: dict[str, Any], emit: Any) -> None:
        item_id = self.ids.get(str(params.get("itemId")))
        if item_id is not None and isinstance(params.get("delta"), str):
            emit(item_id, params["delta"])

    def _started(self, item: dict[str, Any]) -> None:
        kind, codex_id = item.get("type"), str(item.get("id"))
        if kind == "agentMessage":
            self.ids[codex_id] = self.items.new_id()
        elif kind == "reasoning":
            self.ids[codex_id] = self.items.started("reasoning")
        elif kind == "commandExecution":
            self.ran_command = True
            self.ids[codex_id] = self.items.started(
                "command", command=item.get("command"), cwd=item.get("cwd")
            )
        elif kind == "fileChange":
            self.ids[codex_id] = self.items.started("file_change", changes=_changes(item))
        elif kind not in SILENT_ITEMS:
            self.ids[codex_id] = self.items.started("tool_call", name=kind, arguments=item)

    def _completed(self, item: dict[str, Any]) -> None:
        kind, codex_id = item.get("type"), str(item.get("id"))
        item_id = self.ids.pop(codex_id, None)
        if kind == "agentMessage":
            text = text_of(item.get("text"))
            if item_id is None:
                self.items.message(text)
            else:
                self.items.message_completed(item_id, text)
        elif kind == "reasoning":
            summary = item.get("summary")
            text = "\n".join(map(str, summary)) if isinstance(summary, list) else ""
            self.items.completed("reasoning", item_id, text=text)
        elif kind == "commandExecution":
            self.items.completed(
                "command",
                item_id,
                command=item.get("command"),
                cwd=item.get("cwd"),
                status=item.get("status"),
                output=item.get("aggregatedOutput"),
                exitCode=item.get("exitCode"),
            )
        elif kind == "fileChange":
            self.items.completed(
                "file_change", item_id, changes=_changes(item), status=item.get("status")
            )
        elif kind not in SILENT_ITEMS:
            self.items.completed(
                "tool_call", item_id, name=kind, status=item.get("status"), result=item
            )

    def approval(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Ask the Node; the JSON-RPC result for Codex, rendered from `availableDecisions`."""
        kind = APPROVALS.get(method, "tool")
        if kind == "command":
            summary = f"Run: {params.get('command', '')}"
        elif kind == "file_change":
            summary = (
                f"Apply file changes{': ' + str(params['reason']) if params.get('reason') else ''}"
            )
        else:
            summary = f"Grant permissions: {params.get('reason') or ''}"
        available = params.get("availableDecisions")
        available = available if isinstance(available, list) else []
        remember = "acceptForSession" if "acceptForSession" in available else None
        key = _command_key(kind, params)
        if remember is None and key is not None and key in self.remembered:
            return {"decision": "accept"}  # remembered in this Session, by the worker
        decision: Decision | None = self.items.approval(
            kind,
            summary,
            can_remember=remember is not None or key is not None,
            command=params.get("command"),
            cwd=params.get("cwd"),
            reason=params.get("reason"),
            codexItemId=params.get("itemId"),
        )
        if decision is None:
            return {"decision": "cancel"}
        if not decision.allow:
            return {"decision": "decline"}
        if decision.remember and remember is not None:
            return {"decision": remember}
        if decision.remember and key is not None:
            self.remembered.add(key)
        return {"decision": "accept"}

    def usage(self) -> dict[str, Any]:
        fallback = {name: self.lasts.get(name) for name in self.lasts}
        turn = self.totals.step(self.total, fallback) if self.total else fallback
        fields = usage_item(turn, self.model)
        self.items.completed("usage", **fields)
        return fields


def _command_key(kind: str, params: dict[str, Any]) -> str | None:
    """What a remembered command approval matches (the command in its directory), or None.
    The worker remembers it itself: Codex's own "always" for a command is an exec-policy
    amendment, which it writes to `$CODEX_HOME/rules` for every later run, not this Session."""
    command = params.get("command")
    if kind != "command" or not command:
        return None
    return json.dumps([command, params.get("cwd")], sort_keys=True, default=str)
