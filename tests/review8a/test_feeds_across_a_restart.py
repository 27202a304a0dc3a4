"""The SDK's feeds across a restart of a real Node process (SIGTERM, then a new start on the
same home: a new port, token and epoch). docs/observations.md: the feed reconnects by
itself and resumes from its cursor; a cursor from an earlier run of the Node gets a `reset`
frame and a fresh snapshot (observe.events); an attach cursor from an earlier run still
replays (owner sequences are durable)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trio

from maia.client import StreamFrame, attach_session, locate_node, observe_events, open_client
from tests._node_process import running_node
from tests._sessions import new_session, wait_turn

CONFIG = '{"executors": {"echo": {"kind": "echo"}}}'


async def _next(feed: Any) -> StreamFrame:
    with trio.fail_after(60):
        frame: StreamFrame = await feed.__anext__()
    return frame


async def _turn(home: Path, session_id: str, text: str) -> None:
    async with open_client(home=home) as client:
        sent = await client.call(
            "turn.send", command_id=f"t-{text}", session_id=session_id, text=text
        )
        await wait_turn(client, sent.turn.turn_id, "completed")


async def test_both_feeds_carry_on_across_a_node_restart(tmp_path: Path) -> None:
    """observe.events: reset, then a snapshot with the new turn's records (epoch 2);
    session.attach: the new turn's journal records, each once, none of the first turn's
    again."""
    with running_node(tmp_path, CONFIG, {}) as node:
        home = node.home
        async with open_client(home=home) as client:
            session_id = await new_session(client, tmp_path / "project", "restart")
        await _turn(home, session_id, "first")
        query = {"sessionIds": [session_id], "importance": ["authoritative"], "limit": 1000}
        endpoint = locate_node(home=home)  # looked up again at each reconnect
        start = {"epoch": 1, "sequence": 0}
        async with (
            observe_events(endpoint, query) as events,
            attach_session(endpoint, session_id, cursor=start) as attach,
        ):
            while (await _next(events)).type != "summary":
                pass
            attached: list[dict[str, Any]] = []
            while (frame := await _next(attach)).type != "synchronized":
                attached += frame.records
            node.stop()
            node.start()
            await _turn(home, session_id, "second")
            kinds: list[str] = []
            records: tuple[dict[str, Any], ...] = ()
            while (frame := await _next(events)).type != "summary":
                kinds.append(frame.type)
                records = frame.records
            assert kinds[0] == "reset"
            assert "snapshot" in kinds
            assert {r["nodeEpoch"] for r in records} >= {2}
            while (frame := await _next(attach)).type != "synchronized":
                attached += frame.records
            assert events.reconnects >= 1
            assert attach.reconnects >= 1
    journal = [(r["sequence"], r["record"]) for r in attached if r["record"] != "item.delta"]
    assert len(journal) == len(set(journal)), "a journal record arrived twice"
    assert sum(kind == "turn.completed" for _, kind in journal) == 2
