"""Human output: aligned tables for lists, `key  value` blocks for one thing, relative times.

Works on the wire JSON of a result (the same document `--json` prints inside its envelope),
so it renders any op, and knows the important columns of the shapes people look at most
(Sessions, Projects, turns, queue entries, receipts, events). Time comes in as `now_ms`,
so output is deterministic under test. Colour only when the caller says so (a terminal,
and no NO_COLOR).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any, Final

from maia.core import parse_timestamp

CELL_MAX: Final = 60
# Values printed whole: a turn's reply and prompt (`turn show` promises the whole prompt), a
# transcript path, a secret to hand over (a cut token is useless) and the digests a user is
# told to compare or pass back (`--input-digest D`).
_WHOLE: Final = frozenset({
    "outputText", "prompt", "transcriptPath", "token", "registryDigest", "inputDigest",
    "manifestDigest", "normalizedInputDigest", "resolvedFilterDigest", "evidenceDigest",
})  # fmt: skip
# Control characters (newlines, tabs, terminal escapes) shown as spaces in a cell.
_CONTROLS: Final = dict.fromkeys((*range(0x20), 0x7F), " ")
# Printed whole in one object's block, cut in a table's cell: an approval's or an archive's
# summary, why a Session's launch or a turn failed, a receipt's targets (`turn send`'s
# Ctrl-C note says its receipt names the turn).
_WHOLE_IN_BLOCK: Final = frozenset({"summary", "failureMessage", "targets"})
# List key of a result → (column title, field) of its table.
COLUMNS: Final[dict[str, tuple[tuple[str, str], ...]]] = {
    "sessions": (
        ("ID", "sessionId"), ("TITLE", "title"), ("STATE", "state"), ("ACTIVITY", "activity"),
        ("PENDING", "pendingTurns"), ("UPDATED", "updatedAt"),
    ),
    "projects": (("ID", "projectId"), ("KEY", "projectKey"), ("ROOT", "rootPath"), ("ADDED", "createdAt")),  # noqa: E501
    "receipts": (
        ("ID", "receiptId"), ("OPERATION", "operationId"), ("OUTCOME", "outcome"),
        ("CREATED", "createdAt"),
    ),
    "events": (
        ("POSITION", "journalPosition"), ("TYPE", "eventType"), ("OWNER", "ownerId"),
        ("AT", "occurredAt"),
    ),
    "turns": (
        ("ID", "turnId"), ("STATE", "state"), ("SENT", "createdAt"), ("REASON", "failureReason"),
        ("INPUT", "inputPreview"),
    ),
    "queue": (
        ("POS", "position"), ("TURN", "turnId"), ("STATE", "state"), ("REV", "revision"),
        ("SENT", "createdAt"), ("INPUT", "inputPreview"),
    ),
    "candidates": (("ID", "id"), ("LABEL", "label")),
    "approvals": (
        ("ID", "approvalId"), ("SESSION", "sessionId"), ("STATE", "state"), ("KIND", "kind"),
        ("ASKED", "createdAt"), ("SUMMARY", "summary"),
    ),
    "items": (("SEQ", "sequence"), ("KIND", "kind"), ("STATE", "state"), ("TEXT", "text")),
    "routines": (
        ("ID", "routineId"), ("NAME", "name"), ("STATE", "state"), ("REV", "revision"),
        ("NEXT FIRE", "nextFireAt"),
    ),
    "fires": (
        ("SLOT", "scheduledAt"), ("TRIGGER", "triggerKind"), ("STATE", "state"),
        ("REASON", "reason"), ("TURN", "turnState"), ("FAILURE", "failureReason"),
        ("SESSION", "sessionId"),
    ),
    "nextFires": (("AT", "at"), ("LOCAL TIME", "local")),
    "changes": (("KEY", "path"), ("CHANGE", "change"), ("ADMITTED", "before"), ("FILE", "after")),
    "webhooks": (("ID", "webhookId"), ("STATE", "state"), ("URL", "url"), ("EVENTS", "eventTypes"),
                 ("REV", "revision")),
    "deliveries": (
        ("ID", "deliveryId"), ("TYPE", "eventType"), ("STATE", "state"),
        ("TRIES", "attempts"), ("STATUS", "lastStatusCode"), ("NEXT", "nextAttemptAt"),
        ("REASON", "lastReason"),
    ),
    "machines": (
        ("NAME", "name"), ("STATE", "state"), ("INCARNATION", "incarnation"),
        ("REV", "revision"), ("LAST SEEN", "lastSeenAt"), ("ID", "machineId"),
    ),
}  # fmt: skip
# Single objects inside a result, in the order they are shown, with their important fields.
OBJECTS: Final[dict[str, tuple[str, ...]]] = {
    "session": (
        "sessionId", "title", "state", "activity", "status", "prompt", "failureMessage",
        "projectId", "executor", "cwd", "labels", "pendingTurns", "latestTurnId",
        "latestTurnState", "usage", "settled", "settledReason", "revision", "createdAt",
        "updatedAt", "archived", "archivedAt", "summary", "transcriptPath",
    ),
    "approval": (
        "approvalId", "sessionId", "turnId", "state", "kind", "summary", "options",
        "canRemember", "remember", "message", "revision", "createdAt", "expiresAt",
        "resolvedAt",
    ),
    "turn": (
        "turnId", "sessionId", "state", "inputPreview", "failureReason", "failureMessage",
        "revision", "createdAt", "startedAt", "completedAt", "outputText",
    ),
    "project": ("projectId", "projectKey", "rootPath", "workspaceKind", "revision", "createdAt"),
    "receipt": ("receiptId", "operationId", "outcome", "commandId", "targets", "createdAt"),
    "routine": (
        "routineId", "name", "state", "revision", "schedule", "template", "nextFireAt",
        "createdAt", "updatedAt",
    ),
    "fire": ("fireId", "routineId", "triggerKind", "state", "reason", "scheduledAt"),
    "webhook": ("webhookId", "url", "eventTypes", "state", "stateReason", "secretEnv",
                "projectId", "sessionId", "revision", "createdAt"),
    # `link.*`: each field of the nested link on its own line (`link.barrier  yes`).
    "machine": ("name", "machineId", "state", "incarnation", "revocationRevision",
                "recoveryRequired", "executionNodeId", "tokenExpiresAt", "enrolledAt",
                "lastSeenAt", "link.*", "revision", "createdAt", "updatedAt"),
}  # fmt: skip
_COLOURS: Final = {
    "running": "32", "completed": "32", "idle": "36", "working": "32", "failed": "31",
    "interrupted": "33", "stopped": "2", "queued": "33", "starting": "33", "recovering": "33",
}  # fmt: skip


def _maia_error() -> type[Exception]:
    from maia.core import MaiaError

    return MaiaError


def relative(timestamp: str, now_ms: int) -> str:
    """`12s ago`, `5m ago`, `3h ago`, `2d ago` (or `in 5s`); the text itself if unparsable."""
    try:
        delta = (now_ms - parse_timestamp(timestamp)) // 1000
    except _maia_error():  # evaluated only on a failure: rendering imports no error type
        return timestamp
    if -5 <= delta < 1:  # clocks of two processes differ a little: not "in 1s"
        return "just now"
    ahead, delta = delta < 0, abs(delta)
    for size, unit in ((86400, "d"), (3600, "h"), (60, "m"), (1, "s")):
        if delta >= size or unit == "s":
            text = f"{delta // size}{unit}"
            break
    return f"in {text}" if ahead else f"{text} ago"


def _is_time(key: str) -> bool:
    return key.endswith("At")


def cell(key: str, value: Any, now_ms: int, colour: bool = False, whole: bool = False) -> str:
    """One value as text: times relative, lists joined, nested values as compact JSON; cut
    at `CELL_MAX` unless `whole` or the key is one printed whole."""
    if value is None:
        text = "-"
    elif isinstance(value, bool):
        text = "yes" if value else "no"
    elif isinstance(value, str) and _is_time(key):
        text = relative(value, now_ms)
    elif key == "prompt" and isinstance(value, dict):  # a Session's pending approval
        text = f"{value.get('kind')} {value.get('approvalId')}: {value.get('summary') or ''}"
        text = text.rstrip(": ")
    elif key == "targets" and isinstance(value, list) and all(isinstance(v, dict) for v in value):
        text = ", ".join(f"{t.get('targetId')} ({t.get('disposition')})" for t in value) or "-"
    elif isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
        text = ",".join(value) or "-"
    elif isinstance(value, dict | list):
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    else:
        text = str(value)
    text = text.translate(_CONTROLS)  # a tab or an escape in a prompt would break the table
    if len(text) > CELL_MAX and not whole and key not in _WHOLE:
        text = text[: CELL_MAX - 1] + "…"
    if colour and key in ("state", "activity", "latestTurnState") and text in _COLOURS:
        return f"\x1b[{_COLOURS[text]}m{text}\x1b[0m"
    return text


def table(rows: Sequence[dict[str, Any]], columns: Sequence[tuple[str, str]], now_ms: int,
          colour: bool = False) -> str:  # fmt: skip
    """An aligned table with a header; an empty list says so."""
    if not rows:
        return "(none)\n"
    plain = [[cell(f, row.get(f), now_ms) for _, f in columns] for row in rows]
    shown = [[cell(f, row.get(f), now_ms, colour) for _, f in columns] for row in rows]
    widths = [max([len(t)] + [len(r[i]) for r in plain]) for i, (t, _) in enumerate(columns)]
    lines = ["  ".join(t.ljust(w) for (t, _), w in zip(columns, widths, strict=True)).rstrip()]
    for text_row, shown_row in zip(plain, shown, strict=True):
        padded = [
            s + " " * (w - len(t)) for s, t, w in zip(shown_row, text_row, widths, strict=True)
        ]
        lines.append("  ".join(padded).rstrip())
    return "\n".join(lines) + "\n"


def block(value: dict[str, Any], keys: Sequence[str] | None, now_ms: int,
          colour: bool = False) -> str:  # fmt: skip
    """`key  value` lines, aligned; `keys` picks and orders them (None: every key)."""
    chosen = [k for k in (keys or list(value)) if k in value and value[k] is not None]
    width = max((len(k) for k in chosen), default=0)
    lines = []
    for key in chosen:
        text = cell(key, value[key], now_ms, colour, whole=key in _WHOLE_IN_BLOCK)
        if _is_time(key) and isinstance(value[key], str):
            text += f"  ({value[key]})"
        lines.append(f"{key.ljust(width)}  {text}")
    return "\n".join(lines) + ("\n" if lines else "")


def list_key(result: dict[str, Any]) -> str | None:
    """The key of the result's main list, if it has one."""
    for key, value in result.items():
        if isinstance(value, list) and key in COLUMNS:
            return key
    return None


def unserved_cursor_text(result: dict[str, Any]) -> str:
    """An events.read that did not serve its cursor: why, and where to start again."""
    text = f"{result['status']}: {result.get('reason', '')}\n"
    snapshot = result.get("snapshot")
    if isinstance(snapshot, dict):
        text += (
            f"the journal now holds positions {snapshot['oldestRetainedPosition']}"
            f"-{snapshot['headPosition']}; start again with --after {snapshot['cursor']}\n"
        )
    return text


def _fields(value: dict[str, Any], keys: Sequence[str]) -> dict[str, Any]:
    """The object's important fields in order; `K.*` spreads the nested object K's fields
    as `K.field` (a nested object would print as cut JSON)."""
    out: dict[str, Any] = {}
    for key in keys:
        if key.endswith(".*"):
            inner = value.get(key[:-2])
            if isinstance(inner, dict):
                out.update({f"{key[:-2]}.{k}": v for k, v in inner.items()})
        elif key in value:
            out[key] = value[key]
    return out


_META: Final = frozenset(
    {"delivery", "receiptId", "method", "nextCursor", "hasMore", "nextItemCursor"}
)


def human(operation_id: str, result: Any, now_ms: int, colour: bool = False) -> str:
    """The human rendering of an op's result: a `done` line for a mutation, a block per
    known object (Session, turn, Project, receipt), the other fields, then the main list."""
    if not isinstance(result, dict):
        return f"{result}\n"
    if operation_id == "config.show":
        from ._config_cmd import render_config_show

        return render_config_show(result)
    if operation_id == "events.read" and result.get("status", "page") != "page":
        return unserved_cursor_text(result)
    if operation_id == "turn.queue.list":
        rows = ([result["activeTurn"]] if result.get("activeTurn") else []) + result["queue"]
        text = table(rows, COLUMNS["queue"], now_ms, colour)
        waiting = result.get("waiting")
        if isinstance(waiting, dict):  # why the first queued turn does not start yet
            text += (
                f"(waiting: {waiting.get('limit')} {waiting.get('value')} reached, "
                f"{waiting.get('scope')} scope; it starts when a turn ends)\n"
            )
        return text
    out: list[str] = []
    if "delivery" in result:
        note = " (duplicate: this command ran before)" if result["delivery"] == "duplicate" else ""
        out.append(f"{operation_id}: done{note}, receipt {result.get('receiptId')}\n")
    nested = [k for k in OBJECTS if isinstance(result.get(k), dict)]
    key = list_key(result)
    rest = {k: v for k, v in result.items() if k not in _META and k not in nested and k != key}
    if rest.get("status") == "page":
        del rest["status"]
    if not nested and not key:
        out.append(block(rest, None, now_ms, colour))
    else:
        # One aligned block: the known objects' important fields, then the other scalars.
        shown: dict[str, Any] = {}
        for name in nested:
            shown.update(_fields(result[name], OBJECTS[name]))
        shown.update({k: v for k, v in rest.items() if not isinstance(v, dict | list)})
        out.append(block(shown, None, now_ms, colour))
    if key is not None and (result[key] or not any(out)):
        if any(out):
            out.append("\n")
        out.append(table(result[key], COLUMNS[key], now_ms, colour))
        if result.get("nextCursor") and result.get("hasMore", True):
            flag = "--after" if key == "events" else "--cursor"
            out.append(f"(more: {flag} {result['nextCursor']})\n")
    if result.get("nextItemCursor"):  # turn.show: more items than one reply holds
        out.append(f"(more items: --item-cursor {result['nextItemCursor']}, or --full)\n")
    return "".join(out)
