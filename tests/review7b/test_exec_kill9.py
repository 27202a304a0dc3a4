"""Review (s7-review2): kill -9 of a real Node while an `exec` program runs a turn with
turns queued behind it (docs/sessions.md "When the Node restarts"): the program dies with
its worker and never finishes its side effect, the turn reads failed `runtime_lost` after
the restart (never re-run), the queued turns run once each, in order, and every send's
receipt names its turn; `turn send --wait` on the lost turn exits 5 and `turn wait` too."""

from __future__ import annotations

import json
import time
from pathlib import Path

from tests.maia.agents._node import run, wait_turn

from ._killable import kill_9, killable_node

SCRIPT = (
    'read line; case "$line" in slow*) sleep 4; echo "finished $line" >> "$LOG_FILE";; esac; '
    'echo "ran $line" >> "$LOG_FILE"; echo "$line"'
)


def test_kill_9_mid_exec_turn_runs_nothing_twice(tmp_path: Path) -> None:
    """The running program never finishes after the kill; restarted, the slow turn is
    runtime_lost and each queued turn ran exactly once, in send order."""
    log = tmp_path / "runs.log"
    config = json.dumps(
        {
            "executors": {
                "side": {"kind": "exec", "argv": ["/bin/sh", "-c", SCRIPT], "env": ["LOG_FILE"]}
            }
        }
    )
    env = {"LOG_FILE": str(log)}
    with killable_node(tmp_path, config, env) as (cli, node):
        made = cli("session", "create", "--title", "side", "--executor", "user:side")
        assert made.returncode == 0, made.stderr
        slow = run(cli, "turn", "send", "side", "slow one", "--command-id", "s")
        later = [run(cli, "turn", "send", "side", f"next {n}", "--command-id", f"n{n}")
                 for n in (1, 2)]  # fmt: skip
        deadline = time.monotonic() + 60
        while run(cli, "turn", "show", slow["turn"]["turnId"])["turn"]["state"] != "running":
            assert time.monotonic() < deadline, "the slow turn never ran"
            time.sleep(0.1)
        kill_9(node)
    time.sleep(5)  # past the program's sleep: had it survived, it would have logged
    assert not log.exists(), log.read_text()
    with killable_node(tmp_path, config, env) as (cli, _node):
        for turn in later:
            assert wait_turn(cli, turn["turn"]["turnId"])["turn"]["state"] == "completed"
        lost = run(cli, "turn", "show", slow["turn"]["turnId"])["turn"]
        assert (lost["state"], lost["failureReason"]) == ("failed", "runtime_lost"), lost
        assert log.read_text().splitlines() == ["ran next 1", "ran next 2"]
        again = cli("turn", "send", "side", "slow one", "--command-id", "s", "--wait", "--json")
        assert again.returncode == 5, again.stdout
        answer = json.loads(again.stdout)["result"]
        assert (answer["delivery"], answer["turn"]["turnId"]) == ("duplicate", lost["turnId"])
        assert cli("turn", "wait", lost["turnId"]).returncode == 5
        for key, turn in (("s", slow), ("n1", later[0]), ("n2", later[1])):
            receipt = run(cli, "receipt", "get", "--command-id", key)["receipt"]
            assert [t["targetId"] for t in receipt["targets"]] == [turn["turn"]["turnId"]]
    assert log.read_text().splitlines() == ["ran next 1", "ran next 2"]
