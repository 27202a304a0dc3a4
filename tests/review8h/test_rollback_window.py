"""The writer's journal heads across a batch's ROLLBACK; BEGIN IMMEDIATE (s8-cpu, 931bb8e).

When the first request of a batch (or the batch's replayable requests, written first) fails,
`storage/_batch.py` rolls the whole transaction back and begins a new one. Between the two
statements the write lock is free and another process may append to the journal. The heads
the failed request noted are forgotten only when the batch ends, so the batch's next append of
a kept owner trusts them: when the other process appended as many events as were rolled back,
the position SQLite gives is the one expected and the stale owner sequence (or owner number)
is written. Without the heads every append reads the journal and stays exact.

The other process's write is placed in that window deterministically: the failing request sets
a trace callback on the writer's connection that, when `BEGIN IMMEDIATE` starts (the ROLLBACK
done, the lock released), runs a real second Python process appending one event.
"""

from __future__ import annotations

import contextlib
import sqlite3
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import pytest
import trio
import trio.testing

import storage
from maia.core import FakeClock
from storage._writer import Outside

_OTHER_WRITER = textwrap.dedent(
    """
    import sqlite3, sys
    import storage
    conn = sqlite3.connect(sys.argv[1], isolation_level=None, timeout=10)
    conn.execute("BEGIN IMMEDIATE")
    storage.append_event(conn, owner_id=sys.argv[2], event_type="other.wrote",
                         payload={}, now_ms=7)
    conn.execute("COMMIT")
    conn.close()
    """
)


def _other_process_appends(path: Path, owner: str) -> None:
    """A second process appends one event for `owner` to the database at `path`."""
    subprocess.run(
        [sys.executable, "-c", _OTHER_WRITER, str(path), owner],
        check=True,
        timeout=60,
        capture_output=True,
    )


def _append(conn: sqlite3.Connection, owner: str) -> None:
    storage.append_event(conn, owner_id=owner, event_type="test.happened", payload={}, now_ms=5)


class _Gate:
    """Holds the writer thread inside one request until opened, so later requests queue."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.open = threading.Event()

    def __call__(self, conn: sqlite3.Connection) -> None:
        self.entered.set()
        self.open.wait(10)


def _failing_first(path: Path, owner: str, other_owner: str) -> storage.WriteFn[None]:
    """Append one event for `owner`, arm the window's writer, then raise."""

    def fn(conn: sqlite3.Connection) -> None:
        _append(conn, owner)
        armed = [True]

        def trace(statement: str) -> None:
            if armed[0] and statement.startswith("BEGIN"):
                armed[0] = False
                _other_process_appends(path, other_owner)

        conn.set_trace_callback(trace)
        raise ValueError("the first request fails after its append")

    return fn


def _then(owner: str) -> storage.WriteFn[None]:
    """The batch's next request: one more event for `owner` (a kept owner for the heads)."""

    def fn(conn: sqlite3.Connection) -> None:
        conn.set_trace_callback(None)
        _append(conn, owner)

    return fn


async def _batch_of_two(
    store: storage.Storage, first: storage.WriteFn[None], second: storage.WriteFn[None],
    *, replayable: bool,
) -> None:  # fmt: skip
    """`first` then `second` queued behind a gate, so they run as one batch in that order."""
    gate = _Gate()

    async def call(fn: storage.WriteFn[None]) -> None:
        with contextlib.suppress(ValueError):  # the first one's, expected
            await store.write(fn, replayable=replayable)

    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(store.write, Outside(gate))
            assert await trio.to_thread.run_sync(gate.entered.wait, 10)
            nursery.start_soon(call, first)
            await trio.testing.wait_all_tasks_blocked()
            nursery.start_soon(call, second)
            await trio.testing.wait_all_tasks_blocked()
            gate.open.set()


def _journal(path: Path) -> list[tuple[int, str, int, int]]:
    """Every event as (position, owner ID, owner number, owner sequence)."""
    with sqlite3.connect(path) as conn:
        rows = conn.execute("SELECT position, owner_id, owner_no, owner_seq FROM events")
        return sorted(rows)


def _owner_numbers(path: Path) -> dict[str, int]:
    with sqlite3.connect(path) as conn:
        return dict(conn.execute("SELECT owner_id, owner_no FROM event_owners"))


async def _run(tmp_path: Path, *, first_event_of_a: bool, replayable: bool) -> Path:
    path = tmp_path / "w.db"
    async with storage.open_storage(path, clock=FakeClock()) as store:
        if not first_event_of_a:  # session_a: numbered, sequence 1 committed
            await store.write(lambda conn: _append(conn, "session_a"))
        await _batch_of_two(
            store, _failing_first(path, "session_a", "session_x"), _then("session_a"),
            replayable=replayable,
        )  # fmt: skip
    return path


# Found in s8-cpu 931bb8e: the heads noted by a batch's failed first request survived its
# ROLLBACK; BEGIN IMMEDIATE, and another process's append in that window brought the next
# rowid back to the expected one. storage/_batch.forget_heads before those ROLLBACKs.


@pytest.mark.parametrize("replayable", [False, True], ids=["guarded", "replayable"])
async def test_a_rolled_back_sequence_is_not_skipped(tmp_path: Path, replayable: bool) -> None:
    """After the batch's failed first request and another process's append in the window,
    the owner's next event takes the sequence after its last committed one (no gap)."""
    path = await _run(tmp_path, first_event_of_a=False, replayable=replayable)
    journal = _journal(path)
    assert [p for p, *_ in journal] == [1, 2, 3]
    assert [(o, s) for _, o, _, s in journal] == [
        ("session_a", 1), ("session_x", 1), ("session_a", 2),
    ]  # fmt: skip


@pytest.mark.parametrize("replayable", [False, True], ids=["guarded", "replayable"])
async def test_a_rolled_back_owner_number_is_not_reused(tmp_path: Path, replayable: bool) -> None:
    """When the failed request numbered a new owner and another process numbered its own in
    the window, the owner's next event carries its own number, not the other owner's."""
    path = await _run(tmp_path, first_event_of_a=True, replayable=replayable)
    numbers = _owner_numbers(path)
    journal = _journal(path)
    assert sorted(numbers) == ["session_a", "session_x"]
    assert [(o, n, s) for _, o, n, s in journal] == [
        ("session_x", numbers["session_x"], 1), ("session_a", numbers["session_a"], 1),
    ]  # fmt: skip
    with sqlite3.connect(path) as conn:
        owned = storage.read_owner_events(conn, "session_x")
    assert [e.owner_id for e in owned] == ["session_x"]
