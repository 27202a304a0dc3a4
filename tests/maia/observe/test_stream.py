"""The observation stream over a real socket: snapshot, replay, live batches, exact resume."""

from __future__ import annotations

from typing import Any

import trio

from maia.client._observations import ObservationFeed, observe_events

from .conftest import Served


async def _collect(feed: ObservationFeed, count: int) -> list[dict[str, Any]]:
    got: list[dict[str, Any]] = []
    async for frame in feed:
        got.extend(frame.records)
        if len(got) >= count:
            break
    return got


async def test_snapshot_then_live_batches_bounded(served: Served) -> None:
    """A subscriber gets the newest `limit` matches, then live batches of at most 64 records."""
    await served.append("owner_a", 30)
    with trio.fail_after(30):
        async with observe_events(served.endpoint, {"limit": 10}) as feed:
            frames = []
            got: list[dict[str, Any]] = []
            async for frame in feed:
                frames.append(frame)
                got.extend(frame.records)
                if frame.type == "snapshot" and frame.frame["final"]:
                    await served.append("owner_a", 200)
                if len(got) >= 210:
                    break
    snapshot = [r for f in frames if f.type == "snapshot" for r in f.records]
    assert [r["ownerSequence"] for r in snapshot] == list(range(21, 31))
    live = [r for f in frames if f.type == "event" for r in f.records]
    assert [r["ownerSequence"] for r in live] == list(range(31, 231))
    assert all(len(f.records) <= 64 for f in frames)
    record = live[0]
    assert record["schemaVersion"] == "maia.observation.v1"
    assert record["nodeId"] == served.store.node_id
    assert record["importance"] == "authoritative"
    assert record["partitionSequence"] > 0


async def test_resume_is_exact_after_a_client_is_killed_mid_stream(served: Served) -> None:
    """A client killed mid-stream and restarted with its cursor sees each record once, in order."""
    owners = [f"owner_{i}" for i in range(8)]
    total = 3200

    async def writer() -> None:
        for round_ in range(total // (len(owners) * 25)):
            for owner in owners:
                await served.append(owner, 25)
            if round_ % 4 == 0:
                await trio.lowlevel.checkpoint()

    seen: list[dict[str, Any]] = []
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            feed = observe_events(served.endpoint, {"limit": 0, "eventTypes": ["x.tick"]})
            first = await feed.__anext__()  # subscribed: the (empty) snapshot arrived
            assert first.type == "snapshot"
            assert first.records == ()
            nursery.start_soon(writer)
            seen.extend(await _collect(feed, 1000))
            cursor = feed.cursor
            await feed.aclose()  # the client dies; the Node keeps writing
            assert cursor is not None
            async with observe_events(served.endpoint, {"limit": 0, "eventTypes": ["x.tick"]},
                                      cursor=cursor) as resumed:  # fmt: skip
                seen.extend(await _collect(resumed, total - len(seen)))
    positions = [r["partitionSequence"] for r in seen]
    assert len(positions) == total
    assert positions == sorted(set(positions))
    for owner in owners:
        sequences = [r["ownerSequence"] for r in seen if r["ownerId"] == owner]
        assert sequences == list(range(1, total // len(owners) + 1))


async def test_feed_resumes_by_itself_when_the_connection_drops(served: Served) -> None:
    """The SDK iterator reconnects with its last cursor after the socket dies under it."""
    await served.append("owner_a", 100)
    with trio.fail_after(30):
        async with observe_events(served.endpoint, {"limit": 0}) as feed:
            got: list[dict[str, Any]] = []
            async for frame in feed:
                got.extend(frame.records)
                if frame.type == "snapshot":
                    await served.append("owner_a", 100)
                elif len(got) >= 64 and feed.reconnects == 0:
                    assert feed._socket is not None
                    await feed._socket._stream.aclose()  # the TCP connection dies
                if len(got) >= 100:
                    break
            assert feed.reconnects >= 1
    assert [r["ownerSequence"] for r in got] == list(range(101, 201))


async def test_filters_select_by_session_project_type_and_domain(served: Served) -> None:
    """Only records matching every list of the query are delivered (replay and live)."""
    await served.append("s1", 3, session_id="s1", project_id="p1", event_type="turn.started")
    await served.append("s2", 3, session_id="s2", project_id="p1", event_type="turn.started")
    await served.append("p1", 3, project_id="p1", event_type="project.added")
    query = {"sessionIds": ["s1"], "domains": ["agent"], "limit": 100}
    with trio.fail_after(30):
        async with observe_events(served.endpoint, query) as feed:
            got: list[dict[str, Any]] = []
            async for frame in feed:
                got.extend(frame.records)
                if frame.type == "snapshot":
                    await served.append("s2", 2, session_id="s2", event_type="turn.started")
                    await served.append("s1", 2, session_id="s1", event_type="turn.started")
                if len(got) >= 5:
                    break
    assert [(r["ownerId"], r["ownerSequence"]) for r in got] == [("s1", n) for n in range(1, 6)]
    assert {r["domain"] for r in got} == {"agent"}
