"""Cursors of the observation stream: tampered or foreign ones are invalid_cursor; expired,
pruned or earlier-run ones get a reset frame and a fresh snapshot on the same connection."""

from __future__ import annotations

import sqlite3
from typing import Any

import pytest
import trio

from maia.client import observe_events
from maia.core import MaiaError
from maia.observe import OBSERVATIONS_SCOPE, ObservationQuery
from storage import prune_events

from .conftest import Served


async def _first_frames(served: Served, query: dict[str, Any], cursor: str, n: int) -> list[Any]:
    frames = []
    with trio.fail_after(30):
        async with observe_events(served.endpoint, query, cursor=cursor) as feed:
            async for frame in feed:
                frames.append(frame)
                if len(frames) == n:
                    break
    return frames


async def _cursor_after(served: Served, query: dict[str, Any], records: int) -> str:
    got = 0
    with trio.fail_after(30):
        async with observe_events(served.endpoint, query) as feed:
            async for frame in feed:
                got += len(frame.records)
                if got >= records:
                    assert feed.cursor is not None
                    return feed.cursor
    raise AssertionError("unreachable")


@pytest.mark.parametrize("change", ["signature", "payload", "garbage"])
async def test_tampered_cursor_is_invalid(served: Served, change: str) -> None:
    """A cursor altered in any part ends the stream with invalid_cursor (nothing is served)."""
    await served.append("owner_a", 5)
    cursor = await _cursor_after(served, {"limit": 5}, 5)
    prefix, payload, mac = cursor.split(".")
    tampered = {
        "signature": f"{prefix}.{payload}.{mac[:-2]}AA",
        "payload": f"{prefix}.{payload[:-2]}AA.{mac}",
        "garbage": "not a cursor",
    }[change]
    with pytest.raises(MaiaError) as refused:
        await _first_frames(served, {"limit": 5}, tampered, 1)
    assert refused.value.code == "invalid_cursor"


async def test_cursor_of_another_query_is_invalid(served: Served) -> None:
    """A cursor is bound to its query's digest: another query with it is invalid_cursor."""
    await served.append("owner_a", 5)
    cursor = await _cursor_after(served, {"limit": 5}, 5)
    with pytest.raises(MaiaError) as refused:
        await _first_frames(served, {"limit": 5, "eventTypes": ["x.other"]}, cursor, 1)
    assert refused.value.code == "invalid_cursor"


async def test_expired_cursor_gets_reset_then_a_fresh_snapshot(served: Served) -> None:
    """An expired cursor: a reset frame (cursor_reset_required + snapshot descriptor), then
    the snapshot and live records follow on the same connection."""
    await served.append("owner_a", 5)
    query = ObservationQuery(limit=3)
    cursor = served.store.cursors.issue(
        position=2, filter_digest=query.digest(), scope=OBSERVATIONS_SCOPE, ttl_ms=1
    )
    await trio.sleep(0.01)
    frames = await _first_frames(served, {"limit": 3}, cursor, 2)
    reset, snapshot = frames
    assert reset.type == "reset"
    assert reset.frame["error"]["code"] == "cursor_reset_required"
    assert reset.frame["snapshot"]["watermark"]["partitionSequences"][0]["sequence"] == 5
    assert snapshot.type == "snapshot"
    assert [r["ownerSequence"] for r in snapshot.records] == [3, 4, 5]


async def test_pruned_cursor_gets_reset(served: Served) -> None:
    """A cursor behind the pruned horizon is reset, never served from a guess."""
    await served.append("owner_a", 10)
    query = ObservationQuery(limit=2)
    cursor = served.store.cursors.issue(
        position=1, filter_digest=query.digest(), scope=OBSERVATIONS_SCOPE
    )

    def prune(conn: sqlite3.Connection) -> int:
        return prune_events(conn, before_position=6)

    assert await served.store.write(prune) == 5
    frames = await _first_frames(served, {"limit": 2}, cursor, 2)
    assert [f.type for f in frames] == ["reset", "snapshot"]
    assert [r["ownerSequence"] for r in frames[1].records] == [9, 10]


async def test_replay_from_a_valid_cursor_and_heartbeats_carry_fresh_cursors(
    served: Served,
) -> None:
    """A valid cursor replays only what follows it; idle streams send heartbeats whose
    cursors resume at the head."""
    await served.append("owner_a", 10)
    query = ObservationQuery(limit=0)
    cursor = served.store.cursors.issue(
        position=4, filter_digest=query.digest(), scope=OBSERVATIONS_SCOPE
    )
    with trio.fail_after(30):
        async with observe_events(served.endpoint, {"limit": 0}, cursor=cursor,
                                  heartbeats=True) as feed:  # fmt: skip
            frames = []
            async for frame in feed:
                frames.append(frame)
                if frame.type == "heartbeat":
                    break
    assert [r["ownerSequence"] for f in frames for r in f.records] == [5, 6, 7, 8, 9, 10]
    beat = frames[-1].frame
    assert beat["heartbeat"] is True
    assert beat["records"] == []
    assert (
        served.store.cursors.open(
            beat["cursor"], filter_digest=query.digest(), scope=OBSERVATIONS_SCOPE
        )
        == 10
    )
