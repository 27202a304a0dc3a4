"""SIGKILL of a real Node at two moments of a manual routine fire (docs/routines.md "Fires",
"Launching"): right after `routine.run.confirm` answers (the fire recorded, perhaps not yet
claimed), and while the fire's first turn runs its program. After each restart the run has
exactly one fire record, it leaves `launching`, the program started at most once for it, a
started fire names its Session and turn and the scheduler's `turn.send` receipt names that
turn, and a turn killed mid-run reads failed `runtime_lost` (never re-run)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import trio

from actors.routine import scheduler_actor, send_command_id
from maia.client import open_client

from .._node_process import NodeProcess
from ._db import query, wait_rows

FIRES = ("SELECT fire_id, state, reason, session_id, turn_id FROM routine_fires"
         " WHERE routine_id = ? AND trigger_kind = 'manual' ORDER BY scheduled_ms")  # fmt: skip
SENT = ("SELECT json_extract(result, '$.turn.turnId') FROM receipts WHERE actor_id = ?"
        " AND command_id = ? AND operation_id = 'turn.send'")  # fmt: skip
TURN = "SELECT state, failure_reason FROM turns WHERE turn_id = ?"
ENDED = ("completed", "failed", "interrupted")


def _config(log: Path) -> str:
    script = f'read line; echo "start $MAIA_TURN_ID" >> {log}; sleep 3; echo "$line"'
    return json.dumps({"executors": {"slow": {"kind": "exec", "argv": ["/bin/sh", "-c", script]}}})


async def _routine(client: Any, root: Path) -> str:
    project = await client.call("project.add", {"commandId": "p", "rootPath": str(root)})
    body: dict[str, Any] = {
        "commandId": "r1", "name": "yearly",
        "schedule": {"cron": "0 0 1 1 *", "timezone": "UTC"},
        "template": {"projectId": project.project.project_id, "prompt": "work",
                     "executor": "user:slow"},
    }  # fmt: skip
    preview = await client.call("routine.create.preview", body)
    made = await client.call("routine.create.confirm", {
        **body, "inputDigest": preview.input_digest, "proof": preview.proof})  # fmt: skip
    return str(made.routine.routine_id)


async def _run(client: Any, routine_id: str, key: str) -> None:
    body = {"commandId": key, "routineId": routine_id, "expectedRevision": 1}
    preview = await client.call("routine.run.preview", body)
    await client.call("routine.run.confirm", {
        **body, "inputDigest": preview.input_digest, "proof": preview.proof})  # fmt: skip


def _settled(home: Path, routine_id: str, count: int) -> list[tuple[Any, ...]]:
    return wait_rows(home, FIRES, (routine_id,),
                     lambda r: len(r) >= count and all(f[1] != "launching" for f in r))  # fmt: skip


def _check(home: Path, routine_id: str, log: Path, count: int) -> list[tuple[Any, ...]]:
    """Each fire settled; each started one's turn ended, ran at most once, has its receipt."""
    fires = _settled(home, routine_id, count)
    assert len(fires) == count, fires
    for fire_id, state, reason, session_id, turn_id in fires:
        if state != "started":
            assert (state, reason) == ("failed", "outcome_unknown"), (state, reason)
            continue
        assert session_id is not None
        ((turn_state, why),) = wait_rows(home, TURN, (turn_id,), lambda r: r and r[0][0] in ENDED)
        starts = log.read_text().split() if log.exists() else []
        assert starts.count(turn_id) <= 1, starts
        if turn_state == "completed":
            assert starts.count(turn_id) == 1
        else:
            assert (turn_state, why) == ("failed", "runtime_lost"), (turn_state, why)
        key = (scheduler_actor(routine_id), send_command_id(fire_id))
        sent = query(home, SENT, key)
        assert sent == [(turn_id,)], (fire_id, sent)
    return fires


def test_kill_9_around_a_manual_fire_fires_it_once(tmp_path: Path) -> None:
    """Killed just after the run is confirmed, then while its turn runs: one fire per run."""
    home, root, log = tmp_path / "home", tmp_path / "app", tmp_path / "runs.log"
    home.mkdir(mode=0o700)
    root.mkdir()
    (home / "config.jsonc").write_text(_config(log))
    node = NodeProcess(home, {})
    node.start()
    try:

        async def first() -> str:
            async with open_client(home=home) as client:
                routine_id = await _routine(client, root)
                await _run(client, routine_id, "run-1")
            return routine_id

        routine_id = trio.run(first)
        node.kill()  # at most a few ms after the run's confirm answered
        node.start()
        _check(home, routine_id, log, 1)

        async def second() -> None:
            async with open_client(home=home) as client:
                await _run(client, routine_id, "run-2")

        trio.run(second)
        fires = wait_rows(home, FIRES, (routine_id,), lambda r: len(r) == 2 and r[1][4])
        wait_rows(home, TURN, (fires[1][4],), lambda r: r and r[0][0] == "running")
        wait_rows(home, "SELECT 1", (), lambda _: log.exists() and fires[1][4] in log.read_text())
        node.kill()  # the program of run-2's turn is running
        node.start()
        _check(home, routine_id, log, 2)
        assert query(home, TURN, (fires[1][4],)) == [("failed", "runtime_lost")]
    finally:
        node.stop()
