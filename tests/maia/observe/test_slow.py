"""Slow consumers: a subscriber that stops reading never delays writers or another
subscriber; it ends with a gap (or resync) and resumes exactly from its cursor."""

from __future__ import annotations

from typing import Any

import trio

from maia.client import attach_session, observe_events
from storage import insert_session

from ._slow import Stalled, drain, open_stalled
from .conftest import Served

WRITE_BOUND_S = 5.0  # generous: a commit here takes milliseconds; a stall would take forever


async def _until_overflow(served: Served, stalled: Stalled, owner: str, **extra: Any) -> int:
    """Append batches of 50 events (each write within WRITE_BOUND_S) until the stalled
    client's own subscriber overflowed (another reader that fell behind and resumed does not
    count); returns how many were written."""
    written = 0
    with trio.fail_after(60):
        while not stalled.overflowed(served.hub):
            with trio.fail_after(WRITE_BOUND_S):
                await served.append(owner, 50, **extra)
            written += 50
    return written


async def test_stalled_observer_never_delays_writers_or_others_and_resumes_exactly(
    served: Served, nursery: trio.Nursery
) -> None:
    """Writers and a fast subscriber go on while one stops reading; it gets a gap, then its
    cursor replays the rest: every record once, in order, from where its stream began."""
    query = {"query": {"limit": 0, "includeContent": True}}
    stalled = await open_stalled(nursery, served.port, {"id": 1, "method": "observe.events",
                                                        "params": query})  # fmt: skip
    fast: list[dict[str, Any]] = []
    wanted: list[int] = []  # how many were written, once the writer knows
    async with observe_events(served.endpoint, query["query"]) as feed:
        await feed.__anext__()
        # The stalled one reads nothing, so only the hub can say its subscribe was taken:
        # a record written before then is not live for it (limit 0: no snapshot either).
        with trio.fail_after(30):
            while served.hub.statistics().subscribers < 2:  # noqa: ASYNC110 (a snapshot)
                await trio.sleep(0.01)

        async def read_fast() -> None:
            # Read while the writer writes: a fast subscriber that waited would overflow
            # too, and end the writing before the stalled one did (heartbeats wake it).
            async for frame in feed:
                fast.extend(frame.records)
                if wanted and len(fast) >= wanted[0]:
                    return

        async with trio.open_nursery() as readers:
            readers.start_soon(read_fast)
            written = await _until_overflow(served, stalled, "owner_a")
            wanted.append(written)
            with trio.fail_after(30):
                while len(fast) < written:  # noqa: ASYNC110 (read_fast ends at `written`)
                    await trio.sleep(0.01)
    assert [r["ownerSequence"] for r in fast] == list(range(1, written + 1))
    with trio.fail_after(30):
        frames = await drain(stalled)
    bodies = [f["result"]["frame"] for f in frames]
    gap = bodies[-1]
    assert gap["type"] == "gap"
    assert gap["droppedRecordCount"] > 0
    assert gap["watermark"]["coverage"] == "degraded"
    got = [r for b in bodies for r in b.get("records", ())]
    # Its stream began when the Node read the journal's head for it (limit 0: nothing
    # before), which may be after the first batch: from there, each record once, in order.
    first = got[0]["ownerSequence"] if got else None
    if first is not None:
        assert [r["ownerSequence"] for r in got] == list(range(first, first + len(got)))
    async with observe_events(served.endpoint, query["query"], cursor=gap["cursor"]) as resumed:
        with trio.fail_after(30):
            async for frame in resumed:
                got.extend(frame.records)
                if got and got[-1]["ownerSequence"] >= written:
                    break
    first = got[0]["ownerSequence"]
    assert [r["ownerSequence"] for r in got] == list(range(first, written + 1))


async def test_stalled_attach_ends_with_resync_and_the_feed_resumes_exactly(
    served: Served, nursery: trio.Nursery
) -> None:
    """An attach subscriber that stops reading ends with resync; the SDK feed, after its own
    resync, resumes from its cursor and sees each durable record once."""
    from tests.storage._fixtures import seed_project, session_row

    row = session_row()
    session_id = row.session_id

    def seed(conn: Any) -> None:
        seed_project(conn)
        insert_session(conn, row)

    await served.store.write(seed)
    request = {"id": "a", "method": "session.attach", "params": {"sessionId": session_id}}
    stalled = await open_stalled(nursery, served.port, request)
    extra = {"event_type": "turn.started", "session_id": session_id,
             "payload": {"turnId": "turn_1"}}  # fmt: skip
    with trio.fail_after(30):
        while served.hub.statistics().session_subscribers == 0:  # noqa: ASYNC110 (a snapshot)
            await trio.sleep(0.01)
    written = await _until_overflow(served, stalled, session_id, **extra)
    with trio.fail_after(30):
        frames = await drain(stalled)
    bodies = [f["result"]["frame"] for f in frames]
    assert bodies[0]["type"] == "attached"
    assert bodies[-1]["type"] == "resync"
    seen = [r["sequence"] for b in bodies for r in b.get("records", ())]
    # Where the attach began: the head its `attached` frame named (0, or later when a loaded
    # machine let the first writes land before the attach read it; those are not replayed).
    base = bodies[0]["position"]["sequence"]
    assert seen == list(range(base + 1, base + len(seen) + 1))
    # Where the client resumes: after its last record, or, when it overflowed before its
    # first record reached it (a loaded machine), the position its `attached` frame named.
    cursor = dict(bodies[0]["position"])
    if seen:
        cursor["sequence"] = seen[-1]
    assert cursor == {"epoch": served.store.node_epoch, "sequence": seen[-1] if seen else base}
    async with attach_session(served.endpoint, session_id, cursor=cursor) as feed:
        with trio.fail_after(30):
            async for frame in feed:
                seen.extend(r["sequence"] for r in frame.records)
                if frame.type == "synchronized":
                    break
    assert seen == list(range(base + 1, written + 1))
