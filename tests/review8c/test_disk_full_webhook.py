"""A full disk (RLIMIT_FSIZE of 1 byte set on the running Node with prlimit) while a webhook
attempt is in flight: the receiver answers 2xx, but the Node cannot commit that outcome; the
disk has room again 6 s later (docs/webhooks.md "At least once": a delivery is recorded
before it is sent and its outcome after; an unrecorded outcome means it is sent again with
the same webhook-id). The delivery must not stay in flight forever: it ends succeeded,
having reached the receiver under one webhook-id."""

from __future__ import annotations

import resource
from collections.abc import Iterator
from pathlib import Path

import attrs
import pytest
import trio

from .._node_process import NodeProcess, running_node
from ..actors.webhook._receiver import Receiver
from ..actors.webhook.test_node_e2e import CONFIG, SECRET, _add, _maia, _wait_delivery

UNLIMITED = (resource.RLIM_INFINITY, resource.RLIM_INFINITY)


@pytest.fixture
def node(tmp_path: Path) -> Iterator[NodeProcess]:
    with running_node(tmp_path, CONFIG, {"HOOK_SECRET": SECRET}) as process:
        yield process


@attrs.define
class _Late:
    """A stream that holds every write back `delay_s` (the receiver's answer comes late)."""

    stream: trio.SocketStream
    delay_s: float

    async def receive_some(self, max_bytes: int) -> bytes:
        return await self.stream.receive_some(max_bytes)

    async def send_all(self, data: bytes) -> None:
        await trio.sleep(self.delay_s)
        await self.stream.send_all(data)


@attrs.define
class LateReceiver(Receiver):
    """A Receiver whose answers leave 3 s after each request arrived."""

    async def _exchange(self, stream: trio.SocketStream) -> None:
        await super()._exchange(_Late(stream, 3.0))  # type: ignore[arg-type]


def _disk_full(node: NodeProcess, full: bool) -> None:
    assert node.process is not None
    resource.prlimit(node.process.pid, resource.RLIMIT_FSIZE, (1, resource.RLIM_INFINITY)
                     if full else UNLIMITED)  # fmt: skip


async def test_an_outcome_the_disk_refused_is_settled_once_space_is_back(
    node: NodeProcess, nursery: trio.Nursery
) -> None:
    """The 2xx arrives while every write fails; after the disk recovers the delivery ends
    succeeded and every request the receiver saw carried its webhook-id."""
    receiver = LateReceiver(secret=SECRET)
    await nursery.start(receiver.serve)
    hook = await _add(node, receiver, "turn.completed")
    assert (await _maia(node, "webhook", "test", hook, "--yes")).returncode == 0
    try:
        await receiver.wait_for(1, 60)
        _disk_full(node, True)  # before the answer leaves (3 s)
        await trio.sleep(6)
    finally:
        _disk_full(node, False)
    done = await _wait_delivery(node, hook, lambda d: d["state"] == "succeeded")
    assert {r.headers["webhook-id"] for r in receiver.received} == {done["messageId"]}
    assert all(r.verified for r in receiver.received)


async def test_a_retry_due_while_the_disk_is_full_is_sent_once_space_is_back(
    node: NodeProcess, nursery: trio.Nursery
) -> None:
    """A 500, then its 5 s retry falls due while every write fails (8 s); once the disk
    has room again the retry is sent once (same webhook-id) and the delivery ends succeeded."""
    receiver = Receiver(script=[500, 204], secret=SECRET)
    await nursery.start(receiver.serve)
    hook = await _add(node, receiver, "turn.completed")
    assert (await _maia(node, "webhook", "test", hook, "--yes")).returncode == 0
    await receiver.wait_for(1, 60)  # the first attempt failed: its retry waits 5 s (the
    # second waits 300 s: actors/webhook/_schedule.py)
    await _wait_delivery(node, hook, lambda d: d["attempts"] == 1)  # its outcome committed
    try:
        _disk_full(node, True)
        await trio.sleep(8)
    finally:
        _disk_full(node, False)
    done = await _wait_delivery(node, hook, lambda d: d["state"] == "succeeded")
    assert (done["attempts"], len(receiver.received)) == (2, 2)
    assert {r.headers["webhook-id"] for r in receiver.received} == {done["messageId"]}
