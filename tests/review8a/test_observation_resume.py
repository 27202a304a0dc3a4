"""observe.events across a disconnect, at a real Node process with echo workers: a client
that reads one frame, hangs up, and resumes with that frame's cursor while turns run on
sees every authoritative record of its query exactly once, in journal order, each owner's
sequence gap-free (docs/observations.md "Ordering", "Cursors")."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import trio
from trio_websocket import WebSocketConnection

from maia.client import open_client, read_discovery, read_token
from tests._node_process import running_node
from tests._sessions import new_session, wait_turn
from tests.maia.node._raw import hello, open_observation_socket, port_of

CONFIG = '{"executors": {"echo": {"kind": "echo"}}}'


async def _frame(ws: WebSocketConnection) -> dict[str, Any]:
    with trio.fail_after(30):
        answer = orjson.loads(await ws.get_message())
    assert answer["ok"] is True, answer
    frame: dict[str, Any] = answer["result"]["frame"]
    return frame


async def _subscribe(ws: WebSocketConnection, params: dict[str, Any]) -> None:
    assert (await hello(ws))["ok"] is True
    await ws.send_message(orjson.dumps({"id": 1, "method": "observe.events", "params": params}))


async def _send_turns(client: Any, session_id: str, tag: str, count: int) -> None:
    for index in range(count):
        sent = await client.call(
            "turn.send", command_id=f"{tag}-{index}", session_id=session_id, text=f"{tag} {index}"
        )
        await wait_turn(client, sent.turn.turn_id, "completed")


async def test_a_resumed_subscription_misses_and_repeats_nothing(tmp_path: Path) -> None:
    """Snapshot, one live frame, hang up, more turns, resume with the cursor: the records
    of both connections are the journal's (a fresh full snapshot's) exactly."""
    with running_node(tmp_path, CONFIG, {}) as node:
        discovery = read_discovery(node.home / "node.json")
        assert discovery is not None
        token = read_token(node.home / "node.token")
        port, auth = port_of(discovery.url), [(b"Authorization", f"Bearer {token}".encode())]
        async with open_client(discovery.url, token=token) as client:
            session_id = await new_session(client, tmp_path / "project", "resume")
            query = {"sessionIds": [session_id], "importance": ["authoritative"], "limit": 0}
            seen: list[dict[str, Any]] = []
            async with open_observation_socket(port, auth) as ws:
                await _subscribe(ws, {"query": query})
                while (frame := await _frame(ws))["type"] != "summary":
                    pass
                await _send_turns(client, session_id, "before", 3)
                frame = await _frame(ws)
                assert frame["type"] == "event"
                seen += frame.get("records", [])
                cursor = frame["cursor"]
            await _send_turns(client, session_id, "after", 2)
            async with open_observation_socket(port, auth) as ws:
                await _subscribe(ws, {"query": query, "cursor": cursor})
                while (frame := await _frame(ws))["type"] != "heartbeat":
                    assert frame["type"] in ("event", "summary"), frame
                    seen += frame.get("records", [])
            async with open_observation_socket(port, auth) as ws:
                await _subscribe(ws, {"query": {**query, "limit": 1000}})
                whole: list[dict[str, Any]] = []
                while (frame := await _frame(ws))["type"] != "summary":
                    whole += frame.get("records", [])
    ids = [record["observationId"] for record in seen]
    assert len(ids) == len(set(ids)), "a record arrived twice across the reconnect"
    assert ids == [record["observationId"] for record in whole][-len(ids) :]
    assert sum(r["eventType"] == "turn.completed" for r in seen) >= 2
    owners: dict[str, list[int]] = {}
    for record in seen:
        owners.setdefault(record["ownerId"], []).append(record["ownerSequence"])
    for sequences in owners.values():
        assert sequences == list(range(sequences[0], sequences[0] + len(sequences)))
