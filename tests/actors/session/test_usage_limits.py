"""The token limits' decision and the daily cost budget on a real SQLite file: turns of
today count, yesterday's do not, and a send at the budget is refused `budget_exceeded`."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import orjson
import pytest

from actors.session import check_daily_budget, spent_today, token_overrun
from maia.config import CapacityLimits
from maia.core import MaiaError
from storage._schema import migrate

DAY = 86_400_000
NOW = 1_800_000_000_000 - 1_800_000_000_000 % DAY + 3_600_000  # 01:00 UTC of some day


def _turns(tmp_path: Path, costs: list[tuple[int, int]]) -> sqlite3.Connection:
    conn = sqlite3.connect(tmp_path / "maia.db", isolation_level=None)
    migrate(conn, tmp_path / "maia.db")
    conn.execute("INSERT INTO projects (project_id, project_key, root, revision, created_ms,"
                 " updated_ms) VALUES ('project_p', 'p', '/tmp', 1, 0, 0)")  # fmt: skip
    conn.execute("INSERT INTO sessions (session_id, project_id, executor, cwd, state,"
                 " created_ms, updated_ms) VALUES ('session_s', 'project_p', 'builtin:echo',"
                 " '/tmp', 'idle', 0, 0)")  # fmt: skip
    for seq, (created, cost) in enumerate(costs, 1):
        conn.execute(
            "INSERT INTO turns (turn_id, session_id, seq, state, revision, text, created_ms,"
            " usage) VALUES (?, 'session_s', ?, 'completed', 3, 'x', ?, ?)",
            (f"turn_{seq}", seq, created, orjson.dumps({"costMicros": cost}).decode()),
        )
    return conn


def test_only_todays_turns_count_and_the_budget_refuses_at_its_limit(tmp_path: Path) -> None:
    """Yesterday's 900 does not count; today's 300 + 200 reach a 500 budget: refused."""
    conn = _turns(tmp_path, [(NOW - DAY, 900), (NOW - 1000, 300), (NOW - 10, 200)])
    assert spent_today(conn, NOW) == 500
    check_daily_budget(conn, CapacityLimits(max_daily_cost_micros=501), NOW)
    check_daily_budget(conn, CapacityLimits(), NOW)  # no budget: never refused
    with pytest.raises(MaiaError) as refused:
        check_daily_budget(conn, CapacityLimits(max_daily_cost_micros=500), NOW)
    assert refused.value.code == "budget_exceeded"
    assert refused.value.details["spent"] == 500


def test_token_overrun_names_the_limit_passed() -> None:
    """Input is checked first, then output; at the limit exactly is still within it."""
    limits = CapacityLimits(max_input_tokens_per_activation=10, max_output_tokens_per_activation=5)
    assert token_overrun({"inputTokens": 10, "outputTokens": 5}, limits) is None
    assert token_overrun({"inputTokens": 11}, limits) == "input_token_limit_exceeded"
    assert token_overrun({"outputTokens": 6}, limits) == "output_token_limit_exceeded"
