"""A Session runtime on real storage over the in-process worker stand-in
(`_fake_workers`), driven on `MockClock`: the harness of the fake-worker tests."""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import trio

from actors import TrioClock
from actors.session import Command, SendTurn, SessionRuntime, turn_view
from maia.config import UserConfig
from maia.protocol import Turn, new_id
from storage import Storage, open_storage

from .._virtual_time import driven_clock
from ._fake_workers import FakeWorkers
from ._open import open_session_runtime

CLOCK = TrioClock()


class Harness:
    def __init__(self, store: Storage, runtime: SessionRuntime, workers: FakeWorkers,
                 root: Path) -> None:  # fmt: skip
        self.store, self.runtime, self.workers, self.root = store, runtime, workers, root

    async def session(self) -> str:
        session_id = new_id("session")

        def seed(conn: sqlite3.Connection) -> None:
            conn.execute(
                "INSERT OR IGNORE INTO projects (project_id, project_key, root, revision,"
                " created_ms, updated_ms) VALUES ('project_f', 'fake', ?, 1, 0, 0)",
                (str(self.root),),
            )
            conn.execute(
                "INSERT INTO sessions (session_id, project_id, executor, cwd, state, created_ms,"
                " updated_ms) VALUES (?, 'project_f', 'builtin:echo', ?, 'idle', 0, 0)",
                (session_id, str(self.root)),
            )

        await self.store.write(seed)
        return session_id

    async def send(self, session_id: str, text: str) -> str:
        command = Command(new_id("command"), "local-user", f"sha256:{text}")
        result = await self.runtime.send(session_id, SendTurn(command, text))
        return str(result.result["turn"]["turnId"])

    async def wait_turn(self, turn_id: str, *states: str) -> Turn:
        with trio.fail_after(120):
            while True:
                turn = await self.store.read(lambda c: turn_view(c, turn_id))
                if turn.state in states:
                    return turn
                await self.runtime.notifier.wait(turn_id, 5)  # woken by each commit

    async def session_row(self, session_id: str) -> tuple[Any, ...]:
        return tuple(
            await self.store.read(
                lambda c: c.execute(
                    "SELECT state, activity FROM sessions WHERE session_id = ?", (session_id,)
                ).fetchone()
            )
        )


@asynccontextmanager
async def open_harness(tmp_path: Path, **options: Any) -> AsyncIterator[Harness]:
    async with (
        trio.open_nursery() as nursery,
        open_storage(tmp_path / "maia.db", clock=CLOCK, synchronous="NORMAL") as store,
    ):
        workers = FakeWorkers(nursery)
        opened = open_session_runtime(
            store, clock=CLOCK, config=UserConfig(), worker_supervisor=workers, **options
        )
        async with driven_clock(store), opened as runtime:
            yield Harness(store, runtime, workers, tmp_path)
        nursery.cancel_scope.cancel()
