"""The token and cost limits of CapacityLimitsV1 on agent turns (issue 17):

- `maxInputTokensPerActivation` / `maxOutputTokensPerActivation`: a turn whose reported
  usage passes one is interrupted and fails `input_token_limit_exceeded` /
  `output_token_limit_exceeded` (a harness that reports usage only at the turn's end, as
  Claude Code does, has its turn failed as it ends);
- `maxDailyCostMicros`: a `turn.send` while the Node's turns of this UTC day already cost
  that much is refused `budget_exceeded` before the turn is queued.
"""

from __future__ import annotations

import sqlite3
from typing import Any, Final

from maia.config import CapacityLimits
from maia.core import MaiaError

DAY_MS: Final = 86_400_000


def token_overrun(usage: dict[str, Any], limits: CapacityLimits) -> str | None:
    """The failure reason when `usage` passes a per-activation token limit, else None."""
    if usage.get("inputTokens", 0) > limits.max_input_tokens_per_activation:
        return "input_token_limit_exceeded"
    if usage.get("outputTokens", 0) > limits.max_output_tokens_per_activation:
        return "output_token_limit_exceeded"
    return None


def overrun_message(reason: str, limits: CapacityLimits) -> str:
    if reason == "input_token_limit_exceeded":
        most, what = limits.max_input_tokens_per_activation, "maxInputTokensPerActivation"
    else:
        most, what = limits.max_output_tokens_per_activation, "maxOutputTokensPerActivation"
    return f"the turn passed {what} ({most} tokens): interrupted"


def spent_today(conn: sqlite3.Connection, now_ms: int) -> int:
    """What the Node's turns created since this UTC day began cost, in micro-units."""
    start = now_ms - now_ms % DAY_MS
    row = conn.execute(
        "SELECT coalesce(sum(json_extract(usage, '$.costMicros')), 0) FROM turns"
        " WHERE usage IS NOT NULL AND created_ms >= ?",
        (start,),
    ).fetchone()
    return int(row[0])


def check_daily_budget(conn: sqlite3.Connection, limits: CapacityLimits, now_ms: int) -> None:
    """Raises `budget_exceeded` when today's spending reached `maxDailyCostMicros`."""
    budget = limits.max_daily_cost_micros
    if budget is None:
        return
    spent = spent_today(conn, now_ms)
    if spent >= budget:
        raise MaiaError(
            "budget_exceeded",
            f"today's turns cost {spent} of maxDailyCostMicros {budget} ({limits.currency}):"
            " no new turn runs until the next UTC day or a higher budget is admitted",
            {"limit": budget, "spent": spent, "currency": limits.currency},
        )
