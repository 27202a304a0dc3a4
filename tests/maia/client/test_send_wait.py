"""`send_and_wait` against a real Node: one connection, the hello and one `turn.send` for a
short turn, the same turn for a retried commandId, items equal to `turn.show`'s."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from maia.client import Discovery, open_client, send_and_wait, send_and_wait_wire
from maia.core import new_id
from maia.protocol import MaiaError
from tests._wire_count import Wire, count_wire

NodeProcess = tuple[Path, Discovery]


@pytest.fixture
def wire(monkeypatch: pytest.MonkeyPatch) -> Wire:
    """Counts every TCP connection (API and observation sockets alike) and every request."""
    return count_wire(monkeypatch)


async def _session(home: Path, title: str) -> str:
    async with open_client(home=home) as client:
        created = await client.request("session.create", {
            "commandId": new_id("command"), "title": title,
            "projectId": (await _project(client, home))})  # fmt: skip
        return str(created["session"]["sessionId"])


async def _project(client: Any, home: Path) -> str:
    root = home.parent / "project"
    root.mkdir(exist_ok=True)
    page = await client.request("project.list", {})
    for project in page["projects"]:
        if project["rootPath"] == str(root.resolve()):
            return str(project["projectId"])
    added = await client.request("project.add", {"commandId": new_id("command"),
                                                 "rootPath": str(root.resolve())})  # fmt: skip
    return str(added["project"]["projectId"])


async def test_a_short_turn_is_the_hello_and_one_send(
    node_process: NodeProcess, wire: Wire
) -> None:
    """A turn that ends within the send's wait: one connection, two requests (hello, send);
    the answer's items are those `turn.show` lists."""
    home, _ = node_process
    session = await _session(home, "short")
    wire.connections, wire.methods = 0, []
    async with open_client(home=home) as client:
        answer = await send_and_wait(client, session, "Hi!", timeout_s=60)
    assert (wire.connections, wire.methods) == (1, ["node.hello", "turn.send"])
    assert answer.delivery == "new"
    assert (answer.turn.state, answer.turn.output_text) == ("completed", "Hi!")
    async with open_client(home=home) as client:
        shown = await client.request("turn.show", {"turnId": answer.turn.turn_id})
        again = await client.request("turn.send", {"commandId": new_id("command"),
                                                   "sessionId": session, "text": "x"})  # fmt: skip
    assert answer.items is not None
    assert [orjson.loads(orjson.dumps(_wire(i))) for i in answer.items] == shown["items"]
    assert [i["text"] for i in shown["items"] if i["kind"] == "message"] == ["Hi!"]
    assert "items" not in again  # without waitMilliseconds: answered once queued


def _wire(item: Any) -> dict[str, Any]:
    from maia.core import to_json

    return dict(to_json(item))


async def test_a_retried_command_with_wait_returns_the_same_turn(
    node_process: NodeProcess,
) -> None:
    """The same commandId again (with or without a wait, with another wait) is a duplicate of
    the same turn; with the wait it answers the ended turn and its items."""
    home, _ = node_process
    session = await _session(home, "retry")
    params = {"commandId": new_id("command"), "sessionId": session, "text": "once"}
    async with open_client(home=home) as client:
        first = await send_and_wait_wire(client, params, timeout_s=60)
        plain = await client.request("turn.send", params)
        waited = await client.request("turn.send", {**params, "waitMilliseconds": 1500})
        listed = await client.request("turn.list", {"sessionId": session})
    assert first["delivery"] == "new"
    assert first["turn"]["state"] == "completed"
    assert plain["delivery"] == waited["delivery"] == "duplicate"
    assert plain["turn"]["turnId"] == waited["turn"]["turnId"] == first["turn"]["turnId"]
    assert plain["receiptId"] == waited["receiptId"] == first["receiptId"]
    assert waited["turn"] == first["turn"]
    assert waited["items"] == first["items"]
    assert len(listed["turns"]) == 1  # one command, one turn


async def test_a_longer_turn_is_waited_for_on_the_same_connection(
    node_process: NodeProcess, wire: Wire
) -> None:
    """A turn past the send's 4 s wait: still one connection; `turn.wait` until it ends,
    then `turn.show` for its items."""
    home, _ = node_process
    session = await _session(home, "long")
    wire.connections, wire.methods = 0, []
    async with open_client(home=home) as client:
        answer = await send_and_wait(client, session, "/sleep 5000 late", timeout_s=60)
    assert wire.connections == 1
    assert wire.methods[:2] == ["node.hello", "turn.send"]
    assert wire.methods[-1] == "turn.show"
    assert set(wire.methods[2:-1]) == {"turn.wait"}
    assert (answer.turn.state, answer.turn.output_text) == ("completed", "late")
    assert answer.items is not None
    assert answer.items[-1].text == "late"


async def test_the_timeout_bounds_the_wait(node_process: NodeProcess) -> None:
    """`timeout_s` passes before the turn ends: the answer is the running turn, no items."""
    home, _ = node_process
    session = await _session(home, "slow")
    async with open_client(home=home) as client:
        answer = await send_and_wait(client, session, "/sleep 3000 slow", timeout_s=0.3)
        assert answer.turn.state in ("queued", "dispatching", "running")
        assert answer.items is None
        await client.request("turn.wait", {"turnId": answer.turn.turn_id})


async def test_a_wait_out_of_bounds_is_refused_and_queues_nothing(
    node_process: NodeProcess,
) -> None:
    """waitMilliseconds over 4000 fails validation naming the field; no turn is queued."""
    home, _ = node_process
    session = await _session(home, "bounds")
    async with open_client(home=home) as client:
        with pytest.raises(MaiaError) as refused:
            await client.request("turn.send", {"commandId": new_id("command"),
                                               "sessionId": session, "text": "no",
                                               "waitMilliseconds": 4001})  # fmt: skip
        listed = await client.request("turn.list", {"sessionId": session})
    assert refused.value.code == "validation_failed"
    assert "waitMilliseconds" in refused.value.message
    assert listed["turns"] == []
