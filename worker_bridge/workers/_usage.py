"""Per-turn usage from harnesses that report running totals.

Claude Code's `total_cost_usd`/`modelUsage` and Codex's `tokenUsage.total` carry the whole
conversation's figures (across resumes too); a turn's own figures are the difference from
the previous report. `RunningTotals` keeps that baseline; after a worker restart it has
none, so it uses a per-turn figure the harness gives instead (Claude's
`model_usage_since_last_result`, Codex's `last`) when there is one.
"""

from __future__ import annotations

# typing costs a worker ~20 ms of start-up: import it for the type checker only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Any

FIELDS = ("inputTokens", "outputTokens", "cacheReadTokens", "cacheWriteTokens", "costMicros")


def usd_to_micros(usd: Any) -> int | None:
    """Micro-units of a USD figure (the harness's estimate), or None if it is not a number."""
    if isinstance(usd, bool) or not isinstance(usd, int | float) or usd < 0:
        return None
    return round(usd * 1_000_000)


def count(value: Any) -> int:
    """A token count from harness JSON; anything that is not a non-negative int is 0."""
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


class RunningTotals:
    """Turns running totals into per-turn differences."""

    def __init__(self) -> None:
        self.last: dict[str, int] | None = None

    def step(
        self, total: Mapping[str, int | None], fallback: Mapping[str, int | None] | None = None
    ) -> dict[str, int | None]:
        """This turn's figures: `total` minus the previous total; without a previous total,
        `fallback` (the harness's own per-turn figure), else None for each field."""
        if self.last is not None:
            turn: dict[str, int | None] = {}
            for name in FIELDS:
                now, before = total.get(name), self.last.get(name)
                turn[name] = None if now is None or before is None else max(0, now - before)
        else:
            turn = {name: (fallback or {}).get(name) for name in FIELDS}
        self.last = {k: v for k, v in total.items() if v is not None}
        return turn


def usage_item(turn: Mapping[str, int | None], model: str | None) -> dict[str, Any]:
    """The `usage` item's fields (absent figures left out; cost in USD micro-units)."""
    item: dict[str, Any] = {k: v for k, v in turn.items() if v is not None}
    if "costMicros" in item:
        item["currency"] = "USD"
    if model:
        item["model"] = model
    return item
