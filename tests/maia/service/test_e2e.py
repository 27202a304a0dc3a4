"""End to end: a real Node process, the SDK over a real WebSocket, real echo workers; then
SIGKILL of the Node and a restart that recovers without running any turn twice."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest
import trio

from maia.client import open_client
from maia.protocol import MaiaError

from ..._node_process import NodeProcess, running_node
from ..._sessions import new_session, wait_turn

CONFIG = """{
  // the echo worker, logging each prompt it starts (proof that none runs twice)
  "executors": {"echo": {"kind": "echo", "env": ["MAIA_ECHO_LOG"]}},
}
"""


@pytest.fixture
def node(tmp_path: Path) -> Iterator[NodeProcess]:
    with running_node(tmp_path, CONFIG, {"MAIA_ECHO_LOG": str(tmp_path / "echo.log")}) as process:
        yield process


async def test_turns_idempotency_queue_over_the_wire(node: NodeProcess, tmp_path: Path) -> None:
    """Three turns complete in order with their text, with receipts and gap-free events;
    session.create is idempotent; nine sends fill the queue; cancel and interrupt work."""
    async with open_client(home=node.home) as client:
        root = tmp_path / "proj"
        await trio.Path(root).mkdir()
        project = await client.call("project.add", command_id="p1", root_path=str(root))
        project_id = project.project.project_id
        one = await client.call("session.create", command_id="c1", project_id=project_id,
                                executor="user:echo", title="wire")  # fmt: skip
        two = await client.call("session.create", command_id="c1", project_id=project_id,
                                executor="user:echo", title="wire")  # fmt: skip
        assert (one.delivery, two.delivery) == ("new", "duplicate")
        assert one.session.session_id == two.session.session_id
        with pytest.raises(MaiaError) as conflict:
            await client.call("session.create", command_id="c1", project_id=project_id,
                              executor="user:echo", title="other")  # fmt: skip
        assert conflict.value.code == "idempotency_conflict"
        listed = await client.call("session.list")
        assert len(listed.sessions) == 1
        session_id = one.session.session_id

        sent = [
            await client.call(
                "turn.send", command_id=f"t{n}", session_id=session_id, text=f"prompt {n}"
            )
            for n in range(3)
        ]
        done = [await wait_turn(client, s.turn.turn_id, "completed", "failed") for s in sent]
        assert [t.output_text for t in done] == ["prompt 0", "prompt 1", "prompt 2"]
        assert [t.completed_at for t in done] == sorted(t.completed_at for t in done)
        receipts = await client.call("receipt.list", operation_id="turn.send")
        assert {r.receipt_id for r in receipts.receipts} == {s.receipt_id for s in sent}
        position = {"kind": "sequence", "ownerType": "session", "ownerId": session_id,
                    "afterSequence": 0}  # fmt: skip
        page = await client.call("events.read", {"position": position, "limit": 500})
        sequences = [e.owner_sequence for e in page.events]
        assert sequences == list(range(1, len(sequences) + 1))
        assert sum(e.event_type == "turn.completed" for e in page.events) == 3

        first = await client.call("turn.send", command_id="s0", session_id=session_id,
                                  text="/sleep 60000 long")  # fmt: skip
        queued = [
            await client.call(
                "turn.send", command_id=f"s{n}", session_id=session_id, text=f"queued {n}"
            )
            for n in range(1, 8)
        ]
        with pytest.raises(MaiaError) as full:
            await client.call("turn.send", command_id="s8", session_id=session_id, text="ninth")
        assert full.value.code == "turn_queue_full"
        running = await wait_turn(client, first.turn.turn_id, "running")
        queue = await client.call("turn.queue.list", session_id=session_id)
        assert queue.active_turn.turn_id == running.turn_id
        assert [e.position for e in queue.queue] == list(range(1, 8))
        last = queue.queue[-1]
        cancelled = await client.call("turn.cancel", command_id="x1", turn_id=last.turn_id,
                                      expected_revision=last.revision)  # fmt: skip
        assert cancelled.turn.failure_reason == "turn_rejected"
        with pytest.raises(MaiaError) as not_queued:
            await client.call("turn.cancel", command_id="x2", turn_id=running.turn_id,
                              expected_revision=running.revision)  # fmt: skip
        assert not_queued.value.code == "turn_not_queued"
        await client.call("turn.interrupt", command_id="i1", turn_id=running.turn_id)
        interrupted = await wait_turn(client, running.turn_id, "interrupted", "failed", "completed")
        assert interrupted.state == "interrupted"
        after = await wait_turn(client, queued[0].turn.turn_id, "completed")
        assert after.output_text == "queued 1"


def _attempt_pids(home: Path) -> list[int]:
    conn = sqlite3.connect(f"file:{home / 'maia.db'}?mode=ro", uri=True)
    try:
        return [r[0] for r in conn.execute("SELECT pid FROM worker_attempts")]
    finally:
        conn.close()


def _alive(pid: int) -> bool:
    try:
        return bool(psutil.Process(pid).status() != psutil.STATUS_ZOMBIE)
    except psutil.NoSuchProcess:
        return False


async def test_restart_recovers_without_running_twice(node: NodeProcess, tmp_path: Path) -> None:
    """SIGKILL the Node mid-turn: after a restart the running turn reads runtime_lost, the
    queued ones complete in order, none ran twice, and no worker of the old Node is left."""
    async with open_client(home=node.home) as client:
        session_id = await new_session(client, tmp_path / "proj", "r1")
        first = await client.call("turn.send", command_id="r-0", session_id=session_id,
                                  text="/sleep 60000 never finishes")  # fmt: skip
        rest = [
            await client.call(
                "turn.send", command_id=f"r-{n}", session_id=session_id, text=f"after {n}"
            )
            for n in (1, 2, 3)
        ]
        await wait_turn(client, first.turn.turn_id, "running")
    old_pids = _attempt_pids(node.home)
    assert old_pids
    node.kill()
    node.start()
    async with open_client(home=node.home) as client:
        lost = await wait_turn(client, first.turn.turn_id, "failed", "completed")
        assert lost.state == "failed"
        assert lost.failure_reason == "runtime_lost"
        done = [await wait_turn(client, s.turn.turn_id, "completed", "failed") for s in rest]
        assert [t.output_text for t in done] == ["after 1", "after 2", "after 3"]
        assert [t.completed_at for t in done] == sorted(t.completed_at for t in done)
    started = [line.split()[0] for line in (tmp_path / "echo.log").read_text().splitlines()]
    assert len(started) == len(set(started)), "a turn ran twice"
    assert started.count(first.turn.turn_id) == 1
    deadline = time.monotonic() + 30
    while any(_alive(pid) for pid in old_pids) and time.monotonic() < deadline:
        time.sleep(0.1)  # noqa: ASYNC251  (a short poll of /proc, nothing else runs)
    assert not any(_alive(pid) for pid in old_pids), "a worker of the old Node survived"
