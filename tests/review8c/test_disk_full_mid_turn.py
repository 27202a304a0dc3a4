"""A full disk while a turn runs (RLIMIT_FSIZE of 1 byte set on the running Node process with
prlimit: every write of a regular file fails, as on a full disk, and nothing is filled),
lifted a few seconds later (docs/storage.md "If the commit fails ... `unavailable`"; spec:
nothing lost, bounded waits). Requests refused meanwhile answer `unavailable` and write
nothing; once space is back, the turn that ended during the outage must end (written late,
or failed with a reason), and the Session must take its next turn."""

from __future__ import annotations

import resource
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from maia.client import MaiaError, open_client

from .._node_process import NodeProcess, running_node
from .._sessions import new_session, wait_turn

CONFIG = '{"executors": {"echo": {"kind": "echo"}}}\n'
ENDED = ("completed", "failed", "interrupted")
UNLIMITED = (resource.RLIM_INFINITY, resource.RLIM_INFINITY)


@pytest.fixture
def node(tmp_path: Path) -> Iterator[NodeProcess]:
    with running_node(tmp_path, CONFIG, {}) as process:
        yield process


def _disk_full(node: NodeProcess, full: bool) -> None:
    assert node.process is not None
    resource.prlimit(node.process.pid, resource.RLIMIT_FSIZE, (1, resource.RLIM_INFINITY)
                     if full else UNLIMITED)  # fmt: skip


async def test_a_send_during_a_full_disk_is_refused_and_retried_once(
    node: NodeProcess, tmp_path: Path
) -> None:
    """turn.send on a full disk: `unavailable`, nothing written; the same commandId after
    the disk recovers makes one new turn, which completes."""
    async with open_client(home=node.home) as client:
        session_id = await new_session(client, tmp_path / "proj", "s1")
        try:
            _disk_full(node, True)
            with pytest.raises(MaiaError) as refused:
                await client.call("turn.send", command_id="t1", session_id=session_id,
                                  text="full")  # fmt: skip
            assert refused.value.code == "unavailable"
        finally:
            _disk_full(node, False)
        sent = await client.call("turn.send", command_id="t1", session_id=session_id,
                                 text="full")  # fmt: skip
        assert sent.delivery == "new"
        assert (await wait_turn(client, sent.turn.turn_id, *ENDED)).state == "completed"


async def test_a_turn_ending_during_a_full_disk_ends_once_space_is_back(
    node: NodeProcess, tmp_path: Path
) -> None:
    """The worker completes while every write fails; 8 s later the disk has room again:
    the turn ends completed (bounded wait) and the next turn on the Session completes."""
    async with open_client(home=node.home) as client:
        session_id = await new_session(client, tmp_path / "proj", "s1")
        sent = await client.call("turn.send", command_id="t1", session_id=session_id,
                                 text="/sleep 4000 mid")  # fmt: skip
        turn_id = sent.turn.turn_id
        await wait_turn(client, turn_id, "running")
        try:
            _disk_full(node, True)
            shown = await client.call("turn.show", turn_id=turn_id)
            assert shown.turn.state == "running"  # the disk filled before the turn's end
            await trio.sleep(8)  # the worker's end arrives meanwhile (4 s)
        finally:
            _disk_full(node, False)
        ended = await wait_turn(client, turn_id, *ENDED)
        assert ended.state == "completed"  # its end, kept and written once space came back
        after = await client.call("turn.send", command_id="t2", session_id=session_id,
                                  text="after")  # fmt: skip
        assert (await wait_turn(client, after.turn.turn_id, *ENDED)).state == "completed"
