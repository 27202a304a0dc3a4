"""One Claude Code turn: the CLI's stream-json lines mapped to Maia items (HARNESSES.md).

`assistant` lines carry one content block each (text, thinking, tool_use); with
`--include-partial-messages` the raw SSE deltas arrive first as `stream_event`s, so text and
thinking stream live and the whole block closes the item. Tool results (`user` lines)
complete the command, file_change or tool_call item their tool_use opened. `can_use_tool`
control requests become approval requests. Exactly one `result` ends the turn.
"""

from __future__ import annotations

import json
import re

from ._items import Decision, Items, obj
from ._usage import RunningTotals, count, usage_item, usd_to_micros

# typing costs a worker ~20 ms of start-up: import it for the type checker only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

FILE_TOOLS = {"Write": "add", "Edit": "update", "MultiEdit": "update", "NotebookEdit": "update"}
IGNORED = {
    "system",
    "control_response",
    "keep_alive",
    "rate_limit_event",
    "tool_progress",
    "auth_status",
    "streamlined_text",
    "streamlined_tool_use_summary",
}
_EXIT_CODE = re.compile(r"^Exit code (\d+)")


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(c.get("text", "") for c in content if isinstance(c, dict))
    return ""


def session_scoped(suggestions: list[Any]) -> list[Any]:
    """The CLI's suggested permission updates, kept for this conversation only: its own
    destination (`localSettings`, `projectSettings`, …) would make the CLI write the rule
    into a settings file of the directory tree, for every later run and Session there."""
    return [{**s, "destination": "session"} if isinstance(s, dict) else s for s in suggestions]


class ClaudeTurnMapper:
    """Turns the lines of one turn into items; `result()` returns the turn's outcome."""

    def __init__(self, items: Items, totals: RunningTotals) -> None:
        self.items = items
        self.totals = totals
        self.streamed: dict[tuple[str, int], str] = {}  # (message id, block index) -> item id
        self.blocks_seen: dict[str, int] = {}  # message id -> assistant lines so far
        self.message_id = ""
        self.tools: dict[str, tuple[str, str, dict[str, Any]]] = {}  # tool_use_id -> item

    # -- streamed deltas ------------------------------------------------------------

    def stream_event(self, event: Any) -> None:
        if not isinstance(event, dict):
            return
        kind = event.get("type")
        if kind == "message_start":
            self.message_id = str((event.get("message") or {}).get("id", ""))
        elif kind == "content_block_start":
            block = event.get("content_block") or {}
            key = (self.message_id, event.get("index", -1))
            if block.get("type") == "text":
                self.streamed[key] = self.items.new_id()
            elif block.get("type") == "thinking":
                self.streamed[key] = self.items.started("reasoning")
        elif kind == "content_block_delta":
            delta = event.get("delta") or {}
            item_id = self.streamed.get((self.message_id, event.get("index", -1)))
            if item_id is None:
                return
            if delta.get("type") == "text_delta" and isinstance(delta.get("text"), str):
                self.items.message_delta(item_id, delta["text"])
            elif delta.get("type") == "thinking_delta" and isinstance(delta.get("thinking"), str):
                self.items.delta(item_id, delta["thinking"])

    # -- whole blocks ---------------------------------------------------------------

    def assistant(self, message: Any) -> None:
        if not isinstance(message, dict):
            return
        message_id = str(message.get("id", ""))
        for block in message.get("content") or []:
            index = self.blocks_seen.get(message_id, 0)
            self.blocks_seen[message_id] = index + 1
            if isinstance(block, dict):
                self._block(block, self.streamed.get((message_id, index)))

    def _block(self, block: dict[str, Any], item_id: str | None) -> None:
        kind = block.get("type")
        if kind == "text" and isinstance(block.get("text"), str):
            if item_id is None:
                self.items.message(block["text"])
            else:
                self.items.message_completed(item_id, block["text"])
        elif kind == "thinking" and isinstance(block.get("thinking"), str):
            self.items.completed("reasoning", item_id, text=block["thinking"])
        elif kind == "tool_use":
            self._tool_use(block)

    def _tool_use(self, block: dict[str, Any]) -> None:
        name = str(block.get("name", ""))
        tool_id = str(block.get("id", ""))
        args = obj(block.get("input"))
        fields: dict[str, Any]
        if name == "Bash":
            kind = "command"
            fields = {"command": args.get("command", ""), "description": args.get("description")}
        elif name in FILE_TOOLS:
            kind = "file_change"
            path = args.get("file_path") or args.get("notebook_path") or ""
            fields = {"changes": [{"path": path, "kind": FILE_TOOLS[name]}], "tool": name}
        else:
            kind = "tool_call"
            fields = {"name": name, "arguments": args}
        fields["toolUseId"] = tool_id
        self.tools[tool_id] = (kind, self.items.started(kind, **fields), fields)

    def tool_results(self, line: dict[str, Any]) -> None:
        content = (line.get("message") or {}).get("content")
        if not isinstance(content, list):
            return
        extra = line.get("tool_use_result")
        for part in content:
            if not isinstance(part, dict) or part.get("type") != "tool_result":
                continue
            found = self.tools.pop(str(part.get("tool_use_id", "")), None)
            if found is None:
                continue
            kind, item_id, fields = found
            failed = part.get("is_error") is True
            text = _text(part.get("content"))
            status = "failed" if failed else "completed"
            if kind == "command":
                output = text
                if isinstance(extra, dict) and not failed:
                    output = str(extra.get("stdout", "")) + str(extra.get("stderr", ""))
                match = _EXIT_CODE.match(text)
                code = int(match.group(1)) if match else (None if failed else 0)
                self.items.completed(
                    kind, item_id, **fields, status=status, output=output, exitCode=code
                )
            elif kind == "file_change":
                self.items.completed(
                    kind, item_id, **fields, status=status, diff=_diff(extra), result=text
                )
            else:
                self.items.completed(kind, item_id, **fields, status=status, result=text)

    # -- approvals ------------------------------------------------------------------

    def approval_answer(self, request: dict[str, Any]) -> dict[str, Any]:
        """Ask for a `can_use_tool` decision; the `response` object to send back."""
        tool = str(request.get("tool_name", ""))
        args = obj(request.get("input"))
        if tool == "Bash":
            kind, summary = "command", f"Run: {args.get('command', '')}"
        elif tool in FILE_TOOLS:
            path = args.get("file_path") or args.get("notebook_path") or ""
            kind, summary = "file_change", f"{tool} {path}"
        else:
            kind, summary = "tool", f"{tool} {json.dumps(args)[:2000]}"
        suggestions = request.get("permission_suggestions")
        decision: Decision | None = self.items.approval(
            kind,
            summary,
            can_remember=bool(suggestions),
            tool=tool,
            input=args,
            toolUseId=request.get("tool_use_id"),
            reason=request.get("description"),
        )
        if decision is None:
            return {"behavior": "deny", "message": "The turn was interrupted.", "interrupt": True}
        if not decision.allow:
            return {"behavior": "deny", "message": decision.message or "Denied by the user."}
        answer: dict[str, Any] = {"behavior": "allow", "updatedInput": args}
        if decision.remember and isinstance(suggestions, list):
            answer["updatedPermissions"] = session_scoped(suggestions)
        return answer

    # -- the end --------------------------------------------------------------------

    def usage(self, result: dict[str, Any]) -> dict[str, Any]:
        """Emit the turn's usage item; returns its fields."""
        total = _model_totals(result.get("modelUsage"))
        total["costMicros"] = usd_to_micros(result.get("total_cost_usd"))
        since = result.get("model_usage_since_last_result")
        fallback = _model_totals(since) if isinstance(since, dict) else None
        turn = self.totals.step(total, fallback)
        models = result.get("modelUsage")
        model = next(iter(models), None) if isinstance(models, dict) else None
        fields = usage_item(turn, model)
        self.items.completed("usage", **fields)
        return fields


def _model_totals(models: Any) -> dict[str, int | None]:
    totals: dict[str, int | None] = {
        "inputTokens": 0,
        "outputTokens": 0,
        "cacheReadTokens": 0,
        "cacheWriteTokens": 0,
    }
    cost = 0.0
    for usage in (models or {}).values() if isinstance(models, dict) else ():
        if not isinstance(usage, dict):
            continue
        for ours, theirs in (
            ("inputTokens", "inputTokens"),
            ("outputTokens", "outputTokens"),
            ("cacheReadTokens", "cacheReadInputTokens"),
            ("cacheWriteTokens", "cacheCreationInputTokens"),
        ):
            totals[ours] = (totals[ours] or 0) + count(usage.get(theirs))
        if isinstance(usage.get("costUSD"), int | float):
            cost += usage["costUSD"]
    totals["costMicros"] = usd_to_micros(cost)
    return totals


def _diff(extra: Any) -> str | None:
    if not isinstance(extra, dict) or not isinstance(extra.get("structuredPatch"), list):
        return None
    lines: list[str] = []
    for hunk in extra["structuredPatch"]:
        if isinstance(hunk, dict) and isinstance(hunk.get("lines"), list):
            lines.extend(str(line) for line in hunk["lines"])
    return "\n".join(lines)
