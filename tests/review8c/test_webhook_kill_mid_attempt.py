"""SIGKILL of a real Node while a webhook attempt is in flight (the receiver holds the request
open, unanswered): after the restart the delivery is sent again with the same webhook-id and
succeeds, the killed attempt reads `unknown` in the log and does not count toward the tries,
and a further restart sends nothing more (docs/webhooks.md "At least once")."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from .._node_process import NodeProcess, running_node, stop_node
from ..actors.webhook._receiver import Receiver
from ..actors.webhook.test_node_e2e import CONFIG, SECRET, _add, _maia, _show, _wait_delivery


@pytest.fixture
def node(tmp_path: Path) -> Iterator[NodeProcess]:
    with running_node(tmp_path, CONFIG, {"HOOK_SECRET": SECRET}) as process:
        yield process


async def test_a_node_killed_mid_attempt_resends_once_with_the_same_id(
    node: NodeProcess, nursery: trio.Nursery
) -> None:
    """Killed during an unanswered attempt: log [unknown, succeeded], tries 1, one webhook-id,
    nothing sent after the 2xx is recorded, even across another restart."""
    receiver = Receiver(script=[None, 204], secret=SECRET)
    await nursery.start(receiver.serve)
    hook = await _add(node, receiver, "turn.completed")
    assert (await _maia(node, "webhook", "test", hook, "--yes")).returncode == 0
    await receiver.wait_for(1, 60)  # the attempt is in flight, held open by the receiver
    node.kill()
    node.start()
    done = await _wait_delivery(node, hook, lambda d: d["state"] == "succeeded")
    assert len(receiver.received) == 2
    assert {r.headers["webhook-id"] for r in receiver.received} == {done["messageId"]}
    assert all(r.verified for r in receiver.received)
    assert [a["outcome"] for a in done["attemptLog"]] == ["unknown", "succeeded"]
    assert done["attempts"] == 1
    node.stop()
    node.start()
    await trio.sleep(2)  # a wrongly pending delivery would be resent at once (first retry: 0 s)
    again = (await _show(node, hook))["deliveries"]
    assert len(receiver.received) == 2
    assert [d["state"] for d in again] == ["succeeded"]


async def test_a_clean_stop_mid_attempt_is_bounded_and_the_delivery_resumes(
    node: NodeProcess, nursery: trio.Nursery
) -> None:
    """SIGTERM while an attempt hangs: exit 0 (within the 45 s stop bound, else 70), and
    after the restart the same webhook-id is delivered once more and succeeds."""
    receiver = Receiver(script=[None, 204], secret=SECRET)
    await nursery.start(receiver.serve)
    hook = await _add(node, receiver, "turn.completed")
    assert (await _maia(node, "webhook", "test", hook, "--yes")).returncode == 0
    await receiver.wait_for(1, 60)
    assert node.process is not None
    assert await trio.to_thread.run_sync(stop_node, node.process) == 0
    node.start()
    done = await _wait_delivery(node, hook, lambda d: d["state"] == "succeeded")
    assert len(receiver.received) == 2
    assert {r.headers["webhook-id"] for r in receiver.received} == {done["messageId"]}
    assert done["attemptLog"][-1]["outcome"] == "succeeded"
