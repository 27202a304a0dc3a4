"""Per-turn usage (the worker's `usage` item: already per-turn figures) and the Session's
totals: input, output, cache-read and cache-write tokens, and cost in micro-units."""

from __future__ import annotations

import sqlite3
from typing import Any, Final

import orjson

from ._store import Draft

COUNTERS: Final = (
    "inputTokens", "outputTokens", "cacheReadTokens", "cacheWriteTokens", "costMicros",
)  # fmt: skip


def turn_usage(item: dict[str, Any]) -> dict[str, Any]:
    """The usage fields of a `usage` item: the counters (non-negative ints), model, currency."""
    usage: dict[str, Any] = {
        k: item[k] for k in COUNTERS if isinstance(item.get(k), int) and item[k] >= 0
    }
    for key in ("model", "currency"):
        if isinstance(item.get(key), str):
            usage[key] = item[key][:64]
    return usage


def add_usage(conn: sqlite3.Connection, draft: Draft, turn_id: str, item: dict[str, Any]) -> None:
    """Set the turn's usage (the last report of the turn wins) and add it to the Session's
    totals (minus what an earlier report of the same turn added)."""
    usage = turn_usage(item)
    row = conn.execute("SELECT usage FROM turns WHERE turn_id = ?", (turn_id,)).fetchone()
    earlier = orjson.loads(row[0]) if row is not None and row[0] else {}
    total_row = conn.execute(
        "SELECT usage FROM sessions WHERE session_id = ?", (draft.session_id,)
    ).fetchone()
    totals = orjson.loads(total_row[0]) if total_row is not None and total_row[0] else {}
    for key in COUNTERS:
        delta = usage.get(key, 0) - earlier.get(key, 0)
        if delta or key in totals:
            totals[key] = totals.get(key, 0) + delta
    if "currency" in usage:
        totals["currency"] = usage["currency"]
    totals["turns"] = totals.get("turns", 0) + (0 if earlier else 1)
    conn.execute("UPDATE turns SET usage = ? WHERE turn_id = ?",
                 (orjson.dumps(usage).decode(), turn_id))  # fmt: skip
    conn.execute("UPDATE sessions SET usage = ? WHERE session_id = ?",
                 (orjson.dumps(totals).decode(), draft.session_id))  # fmt: skip
