"""The child of the crash test: writes through the storage actor until it is killed.

Usage: python -m tests.storage._crash_child DB_PATH SEED (or `run_child` from a forkserver,
which starts in milliseconds because the modules are preloaded). Prints `ready` once open, then one
line per acknowledged mutation: `ack <commandId> <sessionId> <sharedOwner> <sharedSeq>`.
Each line is written with a single os.write (< PIPE_BUF), after `write` returned, so every
line the parent reads names a committed mutation. Half of the callers write with
`replayable=True`, so both ways of isolating requests are killed mid-batch.
"""

from __future__ import annotations

import os
import sqlite3
import sys
from multiprocessing.connection import Connection
from pathlib import Path

import trio

import storage
from maia.core import SystemClock, digest_json

from ._fixtures import create_session_apply, seed_project, session_row

SHARED_OWNERS = 4
CALLERS = 16


_out = 1  # the ack pipe: stdout, or the pipe the forkserver handed over


def _say(line: str) -> None:
    os.write(_out, (line + "\n").encode())


def _mutation(seed: str, caller: int, n: int) -> storage.WriteFn[tuple[str, str, str, int]]:
    command = f"crash-{seed}-{caller}-{n}"
    row = session_row()
    shared = f"owner_shared_{(caller + n) % SHARED_OWNERS}"

    def apply(conn: sqlite3.Connection) -> storage.Applied:
        applied = create_session_apply(row, 0)(conn)
        event = storage.append_event(
            conn,
            owner_id=shared,
            owner_type="test",
            event_type="test.touched",
            payload={"command": command},
            now_ms=0,
        )
        shared_seq.append(event.owner_sequence)
        return storage.Applied(
            applied.result,
            applied.targets,
            (*applied.event_ids, event.event_id),
            project_id=applied.project_id,
        )

    shared_seq: list[int] = []

    def fn(conn: sqlite3.Connection) -> tuple[str, str, str, int]:
        shared_seq.clear()
        key = storage.MutationKey("actor_crash", "session.create", command)
        storage.run_mutation(
            conn, key=key, input_digest=digest_json({"c": command}), now_ms=0, apply=apply
        )
        return command, row.session_id, shared, shared_seq[-1]

    return fn


async def main(path: Path, seed: str) -> None:
    async with storage.open_storage(path, clock=SystemClock()) as store:
        await store.write(seed_project)
        _say("ready")

        async def caller(index: int) -> None:
            n = 0
            while True:
                # Odd callers' writes are replayable (their fn resets what it records), so
                # the shared-savepoint path is crashed too.
                command, session_id, shared, seq = await store.write(
                    _mutation(seed, index, n), replayable=index % 2 == 1
                )
                _say(f"ack {command} {session_id} {shared} {seq}")
                n += 1

        async with trio.open_nursery() as nursery:
            for index in range(CALLERS):
                nursery.start_soon(caller, index)


def run_child(path: str, seed: str, pipe: Connection) -> None:
    """The entry point when started from a multiprocessing forkserver (fast start)."""
    global _out
    _out = pipe.fileno()
    trio.run(main, Path(path), seed)


if __name__ == "__main__":
    trio.run(main, Path(sys.argv[1]), sys.argv[2])
