"""Both streams over a real Node (in this trio run) with real echo workers: the upgrade gate,
session.attach mid-turn (text so far, then the rest live), resume by cursor."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import attrs
import pytest
import trio

from maia.client import (
    Endpoint,
    MaiaClient,
    attach_session,
    observe_events,
    open_client,
    read_token,
)
from maia.core import MaiaError
from maia.node import NodeConfig, NodeHome, NodeRunning, serve_node

from ..._sessions import new_session, wait_turn
from ..node._raw import raw_upgrade
from ._slow import drain, open_stalled

CONFIG = '{"executors": {"echo": {"kind": "echo"}}}'


@attrs.frozen
class Live:
    running: NodeRunning
    home: NodeHome
    client: MaiaClient

    @property
    def endpoint(self) -> Endpoint:
        return self.client.endpoint


@pytest.fixture
async def live(nursery: trio.Nursery, tmp_path: Path) -> AsyncIterator[Live]:
    """A Node with the echo executor, and an SDK client connected to it."""
    root = tmp_path / "home"
    root.mkdir(mode=0o700)
    (root / "config.jsonc").write_text(CONFIG)
    home = NodeHome(root)
    running: NodeRunning = await nursery.start(serve_node, NodeConfig(home))
    async with open_client(running.url, token=read_token(home.token_path)) as client:
        yield Live(running, home, client)


async def test_the_observation_socket_has_the_same_gate(live: Live) -> None:
    """No token 401, a browser Origin 403, a foreign Host 421, no subprotocol 400."""
    port = int(live.running.url.rsplit(":", 1)[1].split("/")[0])
    token = read_token(live.home.token_path)
    good = {"Host": f"127.0.0.1:{port}", "Authorization": f"Bearer {token}",
            "Sec-WebSocket-Protocol": "maia.node.observations.v1"}  # fmt: skip
    path = "/api/v1/observations"
    cases = [
        ({k: v for k, v in good.items() if k != "Authorization"}, 401),
        ({**good, "Origin": "http://evil.example"}, 403),
        ({**good, "Host": f"evil.example:{port}"}, 421),
        ({k: v for k, v in good.items() if k != "Sec-WebSocket-Protocol"}, 400),
        (good, 101),
    ]
    for headers, status in cases:
        got, _ = await raw_upgrade(port, headers, path)
        assert got == status, headers
    bad = Endpoint(live.endpoint.url, "not-the-token")
    with pytest.raises(MaiaError) as refused:
        async with observe_events(bad) as feed:
            await feed.__anext__()
    assert refused.value.code == "unauthenticated"


async def test_attach_during_a_sleeping_turn_then_everything_live(
    live: Live, tmp_path: Path
) -> None:
    """Attached mid-turn: snapshot shows turn.started, synchronized has no open item yet,
    then item.started, deltas, item.completed and turn.completed arrive live, in order."""
    session_id = await new_session(live.client, tmp_path / "p", "s1")
    sent = await live.client.call("turn.send", command_id="t1", session_id=session_id,
                                  text="/sleep 1500 " + "abc" * 50)  # fmt: skip
    turn_id = sent.turn.turn_id
    await wait_turn(live.client, turn_id, "running")
    frames: list[Any] = []
    with trio.fail_after(60):
        async with attach_session(live.client, session_id) as feed:
            async for frame in feed:
                frames.append(frame)
                if any(r["record"] == "turn.completed" for r in frame.records):
                    break
    kinds = [f.type for f in frames]
    assert kinds[0] == "attached"
    assert frames[0].frame["mode"] == "snapshot"
    sync = kinds.index("synchronized")
    before = [r["record"] for f in frames[:sync] for r in f.records]
    assert before == ["turn.started"]
    assert frames[sync].frame["openItems"] == []
    after = [r for f in frames[sync + 1 :] for r in f.records]
    names = [r["record"] for r in after]
    assert names[0] == "item.started"
    assert names[-2:] == ["item.completed", "turn.completed"]
    assert set(names[1:-2]) == {"item.delta"}
    assert "".join(r["text"] for r in after if r["record"] == "item.delta") == "abc" * 50
    assert after[-2]["text"] == "abc" * 50
    assert after[-1]["turnState"] == "completed"
    assert all(r["sessionId"] == session_id and r["turnId"] == turn_id for r in after)
    sequences = [r["sequence"] for f in frames for r in f.records]
    assert sequences == sorted(sequences)
    assert {r["nodeEpoch"] for f in frames for r in f.records} == {live.running.epoch}


async def test_attach_half_way_through_a_flood_shows_the_text_so_far_then_the_rest(
    live: Live, tmp_path: Path
) -> None:
    """Attached while /flood streams: the open item's text so far plus the live deltas that
    follow is exactly the whole stream of deltas, each once."""
    session_id = await new_session(live.client, tmp_path / "p", "s2")
    count = 20_000
    expected = "".join(str(n) for n in range(count))
    query = {"sessionIds": [session_id], "eventTypes": ["item.delta"], "limit": 0}
    with trio.fail_after(90):
        async with observe_events(live.client, query) as watch:
            await watch.__anext__()  # subscribed
            await live.client.call("turn.send", command_id="f1", session_id=session_id,
                                   text=f"/flood {count}")  # fmt: skip
            async for frame in watch:  # the first live deltas: the flood is under way
                if frame.records:
                    break
        frames: list[Any] = []
        async with attach_session(live.client, session_id) as feed:
            async for frame in feed:
                frames.append(frame)
                if any(r["record"] == "turn.completed" for r in frame.records):
                    break
    sync = next(f for f in frames if f.type == "synchronized")
    index = frames.index(sync)
    live_deltas = [
        r["text"] for f in frames[index + 1 :] for r in f.records if r["record"] == "item.delta"
    ]
    so_far = "".join(item["text"] for item in sync.frame["openItems"])
    assert so_far, "attached after the flood ended: nothing was half-way"
    assert live_deltas, "attached after the last delta: nothing came live"
    assert so_far + "".join(live_deltas) == expected
    completed = [r for f in frames for r in f.records if r["record"] == "item.completed"]
    assert completed[-1]["text"] == "flooded"


async def test_attach_resumes_from_its_cursor(live: Live, tmp_path: Path) -> None:
    """A cursor {epoch, sequence} replays exactly the records after it, once; a cursor past the
    Session's head is invalid_cursor."""
    session_id = await new_session(live.client, tmp_path / "p", "s3")
    turns = []
    for n in range(3):
        sent = await live.client.call("turn.send", command_id=f"r{n}", session_id=session_id,
                                      text=f"prompt {n}")  # fmt: skip
        turns.append(sent.turn.turn_id)
    for turn_id in turns:
        await wait_turn(live.client, turn_id, "completed")
    with trio.fail_after(30):
        async with attach_session(
            live.client, session_id, cursor={"epoch": live.running.epoch, "sequence": 0}
        ) as f:
            everything: list[dict[str, Any]] = []
            async for frame in f:
                everything.extend(frame.records)
                if frame.type == "synchronized":
                    break
        durable = [r for r in everything if r["record"] in ("turn.started", "turn.completed")]
        assert [r["turnId"] for r in durable] == [t for t in turns for _ in range(2)]
        middle = everything[len(everything) // 2]["sequence"]
        async with attach_session(
            live.client, session_id, cursor={"epoch": live.running.epoch, "sequence": middle}
        ) as f:
            rest: list[dict[str, Any]] = []
            async for frame in f:
                assert frame.frame.get("mode", "replay") == "replay"
                rest.extend(frame.records)
                if frame.type == "synchronized":
                    break
    assert rest == [r for r in everything if r["sequence"] > middle]
    with pytest.raises(MaiaError) as invalid:
        async with attach_session(
            live.client, session_id, cursor={"epoch": live.running.epoch, "sequence": 10_000}
        ) as f:
            await f.__anext__()  # fmt: skip
    assert invalid.value.code == "invalid_cursor"


ROUND_TRIP_BOUND_S = 5.0  # turn.send answers in milliseconds; a Node held up by a reader would not


async def test_a_stalled_subscriber_delays_no_turn_send_and_resumes_after_its_gap(
    live: Live, tmp_path: Path, nursery: trio.Nursery
) -> None:
    """While one subscriber reads nothing, every turn.send answers within the bound and
    another subscriber keeps up; the stalled one ends with a gap, and its cursor replays
    every durable record it missed, once."""
    hub = live.running.services.observations
    hub.buffer_capacity = 64  # overflow soon (the default, 4096, takes a long run)
    hub.send_timeout_s = 300.0  # the stalled reader reads again after the bound, not 30 s
    token = read_token(live.home.token_path)
    port = int(live.running.url.rsplit(":", 1)[1].split("/")[0])
    query = {"limit": 0, "includeContent": True}
    stalled = await open_stalled(
        nursery, port, {"id": 1, "method": "observe.events", "params": {"query": query}}, token
    )
    sessions = [await new_session(live.client, tmp_path / f"p{n}", f"k{n}") for n in range(8)]
    fast: list[dict[str, Any]] = []
    stop_at: list[int] = []  # the journal head when the drivers stopped
    hub.heartbeat_s = 0.2

    async def follow() -> None:
        only_durable = {"limit": 0, "importance": ["authoritative"]}
        async with observe_events(live.client, only_durable, heartbeats=True) as f:
            async for frame in f:
                fast.extend(frame.records)
                if stop_at and fast and fast[-1]["partitionSequence"] >= stop_at[0]:
                    return

    async def drive(session_id: str) -> None:
        n = 0
        while not stalled.overflowed(hub):  # its own: the follower may fall behind too
            n += 1
            with trio.fail_after(ROUND_TRIP_BOUND_S):
                sent = await live.client.call("turn.send", command_id=f"{session_id}-{n}",
                                              session_id=session_id, text=f"turn {n}")  # fmt: skip
            await wait_turn(live.client, sent.turn.turn_id, "completed")

    with trio.fail_after(120):
        async with trio.open_nursery() as inner:
            inner.start_soon(follow)
            async with trio.open_nursery() as drivers:
                for session_id in sessions:
                    drivers.start_soon(drive, session_id)
            stop_at.append(hub.delivered_position)
        frames = [f["result"]["frame"] for f in await drain(stalled)]
    head = stop_at[0]
    positions = [r["partitionSequence"] for r in fast]
    assert positions == sorted(set(positions))
    assert set(range(positions[0], head + 1)) <= set(positions)
    gap = frames[-1]
    assert gap["type"] == "gap"
    durable = [r["partitionSequence"] for f in frames for r in f.get("records", ())
               if r["importance"] == "authoritative"]  # fmt: skip
    with trio.fail_after(60):
        async with observe_events(live.client, query, cursor=gap["cursor"]) as resumed:
            async for frame in resumed:
                durable.extend(r["partitionSequence"] for r in frame.records
                               if r["importance"] == "authoritative")  # fmt: skip
                if durable and durable[-1] >= head:
                    break
    assert durable == sorted(set(durable))
    assert set(durable) == set(range(durable[0], head + 1))
