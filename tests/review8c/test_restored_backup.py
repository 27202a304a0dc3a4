"""`maia node backup` of a running Node with a turn in flight, restored as another home
(docs/node.md "Clean stop and backups"): a Node started on the copy recovers the copy's
running turn as failed `runtime_lost` and runs the copy's queued turn, and it leaves the
original Node, its worker and its turn alone (its recovery's sweep of recorded worker
attempts must only reach workers its own home started)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from maia.client import open_client

from .._node_process import NodeProcess, running_node
from .._sessions import new_session, wait_turn
from ._db import alive, wait_rows

CONFIG = '{"executors": {"echo": {"kind": "echo"}}}\n'
MAIA = str(Path(sys.executable).parent / "maia")
PID = "SELECT pid FROM worker_attempts WHERE session_id = ? AND pid IS NOT NULL"


@pytest.fixture
def node(tmp_path: Path) -> Iterator[NodeProcess]:
    with running_node(tmp_path, CONFIG, {}) as process:
        yield process


async def test_a_node_on_a_restored_backup_spares_the_original(
    node: NodeProcess, tmp_path: Path
) -> None:
    """The copy's Node: its running turn runtime_lost, its queued turn completed; the
    original's worker still alive and its turn still running, then completed."""
    copy_home = tmp_path / "restored"
    copy_home.mkdir(mode=0o700)
    (copy_home / "config.jsonc").write_text(CONFIG)
    async with open_client(home=node.home) as client:
        session_id = await new_session(client, tmp_path / "proj", "s1")
        slow = await client.call("turn.send", command_id="t1", session_id=session_id,
                                 text="/sleep 40000 slow")  # fmt: skip
        queued = await client.call("turn.send", command_id="t2", session_id=session_id,
                                   text="queued")  # fmt: skip
        await wait_turn(client, slow.turn.turn_id, "running")
        ((pid,),) = await trio.to_thread.run_sync(
            lambda: wait_rows(node.home, PID, (session_id,), bool)
        )
        backed = await trio.to_thread.run_sync(lambda: subprocess.run(
            [MAIA, "node", "backup", str(copy_home / "maia.db"), "--home", str(node.home)],
            capture_output=True, text=True, timeout=60, check=False))  # fmt: skip
        assert backed.returncode == 0, backed.stderr
        restored = NodeProcess(copy_home, {})
        try:
            await trio.to_thread.run_sync(restored.start)
            async with open_client(home=copy_home) as copy:
                lost = await wait_turn(copy, slow.turn.turn_id, "completed", "failed")
                assert (lost.state, lost.failure_reason) == ("failed", "runtime_lost")
                ran = await wait_turn(copy, queued.turn.turn_id, "completed", "failed")
                assert ran.state == "completed"
            still = await client.call("turn.show", turn_id=slow.turn.turn_id)
            assert (alive(pid), still.turn.state, still.turn.failure_message) == (
                True, "running", None)  # fmt: skip
            done = await wait_turn(client, slow.turn.turn_id, "completed", "failed")
            assert done.state == "completed"
        finally:
            await trio.to_thread.run_sync(restored.stop)
            shutil.rmtree(copy_home, ignore_errors=True)
