"""docs/agents.md "Usage and cost" for an ACP agent through a real Node: the agent's
`usage_update` cost is the session's running total, so each turn's `costMicros` is the
difference (also after a Node restart, from the total the agent reports while loading),
and `maxDailyCostMicros` counts it: the turn after the budget is spent is refused."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.maia.agents._node import node_with, run, send, wait_turn
from tests.worker_bridge.agents._drive import base_env

AGENT = Path(__file__).parents[1] / "worker_bridge" / "agents" / "acp_test_agent.py"
BUDGET = 3_000  # micro-USD: the third turn (1,200 each) is the last that may start


def test_acp_turn_cost_is_per_turn_and_counts_against_the_daily_budget(tmp_path: Path) -> None:
    """1,200 micro-USD a turn, before and after a restart; the fourth send is refused."""
    executor = {"kind": "acp", "argv": [sys.executable, str(AGENT)],
                "env": ["HOME", "ACP_TEST_STATE", "ACP_TEST_COST_USD"]}  # fmt: skip
    capacity = {"maxDailyCostMicros": BUDGET, "currency": "USD"}
    config = json.dumps({"swarm": {"capacity": capacity}, "executors": {"acp": executor}})
    env = {**base_env(tmp_path / "agent-home"), "ACP_TEST_STATE": str(tmp_path / "acp.json"),
           "ACP_TEST_COST_USD": "0.0012"}  # fmt: skip
    costs = []
    with node_with(tmp_path, config, env) as cli:
        created = cli("session", "create", "--title", "agent", "--executor", "user:acp")
        assert created.returncode == 0, created.stderr
        for text in ("one", "two"):
            shown = wait_turn(cli, send(cli, text))["turn"]
            costs.append((shown["usage"].get("costMicros"), shown["usage"].get("currency")))
    with node_with(tmp_path, config, env) as cli:
        shown = wait_turn(cli, send(cli, "three"))["turn"]
        assert shown["state"] == "completed", shown
        costs.append((shown["usage"].get("costMicros"), shown["usage"].get("currency")))
        assert costs == [(1200, "USD")] * 3, costs
        assert run(cli, "session", "show", "agent")["session"]["usage"]["costMicros"] == 3600
        refused = cli("turn", "send", "agent", "four", "--json")
        assert refused.returncode != 0, refused.stdout
        assert "budget_exceeded" in refused.stdout + refused.stderr
