"""`maia turn queue list` (human) against a real Node whose `maxConcurrentActivations` is 1:
a turn held by that limit says why it waits (`waiting`), as `--json` does."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from ._node import Cli, running_node


@pytest.fixture(scope="module")
def cli(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cli]:
    """A foreground Node that runs one turn at a time, and a Project directory."""
    config = '{"swarm": {"capacity": {"maxConcurrentActivations": 1}}}'
    with running_node(tmp_path_factory.mktemp("queue_wait"), config=config) as started:
        admitted = started("config", "admit", "--yes")
        assert admitted.returncode == 0, admitted.stderr
        yield started


def _sent(cli: Cli, *args: str) -> str:
    sent = cli("turn", "send", *args, "--json")
    assert sent.returncode == 0, sent.stderr
    return str(json.loads(sent.stdout)["result"]["turn"]["turnId"])


def test_a_turn_held_by_a_capacity_limit_says_so(cli: Cli) -> None:
    """One Session's long turn runs; another's turn waits for the Node's one slot: the
    human queue list names the limit, its value and its scope, as `waiting` in --json."""
    for title in ("holder", "waiter"):
        assert cli("session", "create", "--title", title).returncode == 0
    holding = _sent(cli, "holder", "/sleep 60000 hold")
    assert cli("turn", "wait", holding, "--state", "running", "--timeout", "30s").returncode == 0
    _sent(cli, "waiter", "second")
    # The send starts the waiter's worker (`starting`); once it is up the turn asks for the
    # slot, does not get it, and the Session reads `idle` (no activation holds it).
    waited = cli("session", "wait", "waiter", "--state", "idle", "--timeout", "30s")
    assert waited.returncode == 0, waited.stderr
    try:
        data = json.loads(cli("turn", "queue", "list", "waiter", "--json").stdout)["result"]
        assert data["waiting"] == {"limit": "maxConcurrentActivations", "scope": "node",
                                   "value": 1}  # fmt: skip
        shown = cli("turn", "queue", "list", "waiter")
        assert shown.returncode == 0, shown.stderr
        assert "(waiting: maxConcurrentActivations 1 reached, node scope" in shown.stdout
    finally:
        assert cli("turn", "interrupt", holding).returncode == 0
