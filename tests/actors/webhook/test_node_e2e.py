"""End to end: a real Node process, `maia webhook ...` as real CLI processes, the SDK for
Sessions, and a real HTTP receiver on 127.0.0.1 (admitted by the allow-list) that verifies
every delivery with the standardwebhooks reference library. Then SIGKILL of the Node while a
delivery is failing, and a restart that finishes it with the same webhook-id.

Every destination is on loopback: refusals use 127.0.0.2 and ::1 (outside the allow-list),
so even a broken guard could only reach this machine's loopback.
"""

from __future__ import annotations

import base64
import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio

from maia.client import open_client

from ..._node_process import NodeProcess, running_node
from ..._sessions import new_session, wait_turn
from ...maia.cli._node import Cli
from ._receiver import Receiver

SECRET = "whsec_" + base64.b64encode(b"e2e-secret-" * 3).decode()
CONFIG = """{
  "executors": {"echo": {"kind": "echo"}},
  // local receivers for the tests; nothing else on loopback is admitted
  "webhooks": {"allowAddresses": ["127.0.0.1/32"]},
}
"""
BOUND_S = 60.0


@pytest.fixture
def node(tmp_path: Path) -> Iterator[NodeProcess]:
    with running_node(tmp_path, CONFIG, {"HOOK_SECRET": SECRET}) as process:
        yield process


async def _maia(node: NodeProcess, *args: str) -> subprocess.CompletedProcess[str]:
    """`maia ARGS` as a child process, in a thread so the receiver keeps answering."""
    cwd = node.home.parent
    return await trio.to_thread.run_sync(lambda: Cli(node.home, cwd).process(*args))


async def _add(node: NodeProcess, receiver: Receiver, *events: str) -> str:
    done = await _maia(node, "webhook", "add", "--url", f"http://127.0.0.1:{receiver.port}/in",
                       *[f"--event={e}" for e in events], "--secret-env", "HOOK_SECRET",
                       "--yes", "--json")  # fmt: skip
    assert done.returncode == 0, done.stderr
    return str(json.loads(done.stdout)["result"]["webhook"]["webhookId"])


async def _show(node: NodeProcess, hook: str) -> Any:
    done = await _maia(node, "webhook", "show", hook, "--json")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["result"]


async def _wait_delivery(node: NodeProcess, hook: str, test: Any) -> Any:
    """`webhook show` until its newest delivery passes `test` (bounded)."""
    with trio.fail_after(BOUND_S):
        while True:
            deliveries = (await _show(node, hook))["deliveries"]
            if deliveries and test(deliveries[0]):
                return deliveries[0]
            await trio.sleep(0.2)


async def test_cli_add_test_deliver_show_and_refuse(
    node: NodeProcess, tmp_path: Path, nursery: trio.Nursery
) -> None:
    """add, test (maia.ping) and a real turn.completed are delivered and verified; a hanging
    receiver delays neither another webhook nor turn.send; show lists the deliveries; loopback
    addresses outside the allow-list, in every form, are refused at add."""
    receiver, hanging = Receiver(secret=SECRET), Receiver(script=[None])
    await nursery.start(receiver.serve)
    await nursery.start(hanging.serve)
    slow = await _add(node, hanging, "turn.completed")
    hook = await _add(node, receiver, "turn.completed")
    tested = await _maia(node, "webhook", "test", hook, "--yes")
    assert tested.returncode == 0, tested.stderr
    await receiver.wait_for(1, BOUND_S)
    async with open_client(home=node.home) as client:
        session_id = await new_session(client, tmp_path / "proj", "s1")
        with trio.fail_after(10):  # the hanging receiver holds up neither turn.send ...
            sent = await client.call("turn.send", command_id="t1", session_id=session_id,
                                     text="hello")  # fmt: skip
        await wait_turn(client, sent.turn.turn_id, "completed")
    with trio.fail_after(10):  # ... nor the other webhook (its attempt is cut off at 15 s)
        await receiver.wait_for(2, 10)
    await hanging.wait_for(1, BOUND_S)
    ping, completed = receiver.received[:2]
    assert ping.verified is True
    assert completed.verified is True
    assert json.loads(ping.body)["type"] == "maia.ping"
    body = json.loads(completed.body)
    assert (body["type"], body["data"]["sessionId"]) == ("turn.completed", session_id)
    shown = await _wait_delivery(node, hook, lambda d: d["state"] == "succeeded")
    assert shown["messageId"] == completed.headers["webhook-id"]
    table = await _maia(node, "webhook", "show", hook)
    assert "turn.completed" in table.stdout
    assert "succeeded" in table.stdout
    assert slow != hook
    for url in ("http://127.0.0.2:9/", "http://[::1]:9/", "http://2130706434:9/",
                "http://0x7f.0.0.2:9/", "http://0177.0.0.2:9/", "http://[::ffff:127.0.0.1]:9/",
                "http://0:9/"):  # fmt: skip
        refused = await _maia(node, "webhook", "add", "--url", url, "--event", "turn.completed",
                              "--secret-env", "HOOK_SECRET", "--yes")  # fmt: skip
        assert refused.returncode != 0, url
        assert "refused" in refused.stderr, refused.stderr
    listed = await _maia(node, "webhook", "list", "--json")
    assert len(json.loads(listed.stdout)["result"]["webhooks"]) == 2


async def test_sigkill_mid_retry_then_the_same_webhook_id_succeeds(
    node: NodeProcess, nursery: trio.Nursery
) -> None:
    """A delivery failing with 500 when the Node is SIGKILLed is retried after the restart
    with the same webhook-id and succeeds; once its 2xx is recorded it is never sent again.

    At least once: a duplicate is possible only when the Node dies between the receiver's
    2xx and the commit of that attempt's outcome (the attempt then reads `unknown` after the
    restart and is sent again). This test kills the Node outside that window: after the
    failed attempt's outcome was committed, while the retry waits on its durable timer.
    """
    receiver = Receiver(script=[500], secret=SECRET)
    await nursery.start(receiver.serve)
    hook = await _add(node, receiver, "turn.completed")
    assert (await _maia(node, "webhook", "test", hook, "--yes")).returncode == 0
    failing = await _wait_delivery(node, hook, lambda d: d.get("lastStatusCode") == 500)
    assert failing["state"] == "pending"
    node.kill()
    receiver.script = [204]
    node.start()
    done = await _wait_delivery(node, hook, lambda d: d["state"] == "succeeded")
    ids = {r.headers["webhook-id"] for r in receiver.received}
    assert ids == {done["messageId"]}
    assert all(r.verified for r in receiver.received)
    count = len(receiver.received)
    node.stop()  # a second restart finds nothing to send
    node.start()
    await trio.sleep(2)
    await _show(node, hook)
    assert len(receiver.received) == count
    outcomes = [a["outcome"] for a in done["attemptLog"]]
    assert outcomes[0] == "failed"
    assert outcomes[-1] == "succeeded"
