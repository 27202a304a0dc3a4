"""Routines across real Node processes killed with SIGKILL around a claim: no slot fires
twice, a launching fire resolves as the spec says after the restart, and the slots passed
over while the Node was down are recorded `skipped`/`missed`.

Each Node is `python -m tests.maia.service._shifted HOME OFFSET`: the real Node, its wall
clock shifted so a `*/15` slot is seconds away (and, for the outage, 45 minutes later)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import trio

from actors.routine import scheduler_actor, send_command_id
from maia.client import open_client
from maia.core import read_discovery
from maia.node import NodeHome
from tests._db_reads import query
from tests._db_reads import wait_rows as _wait_rows

from ._shifted import QUARTER_MS, offset_to_slot

ROOT = Path(__file__).resolve().parents[3]
ENDED = ("completed", "failed", "interrupted")
BOUND_S = 90.0  # every wait: generous, real processes on a loaded machine


@contextmanager
def node(home: Path, offset_ms: int) -> Iterator[subprocess.Popen[bytes]]:
    """A real Node process on `home`; SIGKILLed (if still running) when the block ends."""
    before = read_discovery(NodeHome(home).discovery_path)
    log = home.parent / "node-stderr.log"
    with log.open("ab") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", "tests.maia.service._shifted", str(home), str(offset_ms)],
            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=stderr, start_new_session=True,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + BOUND_S
        while True:
            record = read_discovery(NodeHome(home).discovery_path)
            if record is not None and record.pid == process.pid and record != before:
                break
            assert process.poll() is None, log.read_text(errors="replace")[-2000:]
            assert time.monotonic() < deadline, "the Node did not start"
            time.sleep(0.05)
        yield process
    finally:
        kill(process)


def kill(process: subprocess.Popen[bytes]) -> None:
    """SIGKILL the Node's process group (its workers exit when their stdin closes)."""
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=BOUND_S)


def wait_rows(home: Path, sql: str, args: tuple[Any, ...], done: Any) -> list[tuple[Any, ...]]:
    return _wait_rows(home, sql, args, done, BOUND_S, poll_s=0.02)


def create_routine(home: Path, root: Path) -> str:
    async def run() -> str:
        async with open_client(home=home) as client:
            project = await client.call("project.add", {"commandId": "p", "rootPath": str(root)})
            body: dict[str, Any] = {
                "commandId": "c1", "name": "tick",
                "schedule": {"cron": "*/15 * * * *", "timezone": "UTC"},
                "template": {"projectId": project.project.project_id, "prompt": "hello"},
            }  # fmt: skip
            preview = await client.call("routine.create.preview", body)
            made = await client.call("routine.create.confirm", {
                **body, "inputDigest": preview.input_digest, "proof": preview.proof})  # fmt: skip
            return str(made.routine.routine_id)

    return trio.run(run)


FIRES = "SELECT scheduled_ms, state, reason, session_id, turn_id FROM routine_fires" \
        " WHERE routine_id = ? ORDER BY scheduled_ms"  # fmt: skip


def test_sigkill_after_a_claim_never_fires_the_slot_twice_and_records_missed_slots(
    tmp_path: Path,
) -> None:
    """Kill right after the claim commits; the restart resolves the launching fire (started
    only from the scheduler's turn.send receipt, else outcome_unknown) and never claims the
    slot again; 45 minutes down later, the newest slot fires and the two before it are
    recorded skipped/missed."""
    home, root = tmp_path / "home", tmp_path / "app"
    home.mkdir(mode=0o700)
    root.mkdir()
    offset = offset_to_slot(15)
    with node(home, offset) as first:
        routine_id = create_routine(home, root)
        claimed = wait_rows(home, FIRES, (routine_id,), bool)
        kill(first)  # SIGKILL around the claim: at most a few ms after it committed
    ((slot, state_at_kill, *_),) = claimed
    assert slot % QUARTER_MS == 0
    assert state_at_kill in ("launching", "started")

    with node(home, offset):
        (fire,) = wait_rows(home, FIRES, (routine_id,), lambda r: r and r[0][1] != "launching")
        next_fire = query(home, "SELECT next_fire_ms FROM routines")[0][0]
        slot_ms, state, reason, session_id, turn_id = fire
        if state == "started":  # let its first turn settle, so the next slot cannot overlap
            wait_rows(home, "SELECT state FROM turns WHERE turn_id = ?", (turn_id,),
                      lambda r: r and r[0][0] in ENDED)  # fmt: skip
    assert (slot_ms, next_fire) == (slot, slot + QUARTER_MS)
    sent = (scheduler_actor(routine_id), send_command_id(_fire_id(home, slot)))
    receipt = query(home, "SELECT json_extract(result, '$.turn.turnId') FROM receipts"
                    " WHERE actor_id = ? AND command_id = ? AND operation_id = 'turn.send'",
                    sent)  # fmt: skip
    if receipt:
        assert (state, reason, turn_id) == ("started", None, receipt[0][0])
        assert session_id is not None
    else:
        assert (state, reason) == ("failed", "outcome_unknown")

    with node(home, offset + 3 * QUARTER_MS):  # the Node was down 45 minutes
        rows = wait_rows(home, FIRES, (routine_id,), lambda r: len(r) == 4)
        time.sleep(1)  # nothing more may appear for these slots
        again = query(home, FIRES, (routine_id,))
    assert [r[0] - slot for r in again] == [0, QUARTER_MS, 2 * QUARTER_MS, 3 * QUARTER_MS]
    assert [r[1:3] for r in rows[1:3]] == [("skipped", "missed"), ("skipped", "missed")]
    assert rows[3][1] in ("launching", "started")
    per_slot = query(home, "SELECT scheduled_ms, count(*) FROM routine_fires GROUP BY 1")
    assert all(count == 1 for _, count in per_slot)


def _fire_id(home: Path, slot: int) -> str:
    return str(query(home, "SELECT fire_id FROM routine_fires WHERE scheduled_ms = ?",
                     (slot,))[0][0])  # fmt: skip
