"""Opening the Session kind alone on a real storage, as the Node does (workers, then Sessions)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from actors import WORKERS, open_actor_runtime
from actors.session import SESSIONS, SessionRuntime
from maia.config import UserConfig
from maia.protocol import Clock
from storage import Storage
from supervision.workers import WorkerTimings


@asynccontextmanager
async def open_session_runtime(
    store: Storage, *, clock: Clock, config: UserConfig, timings: WorkerTimings | None = None,
    **options: Any,
) -> AsyncIterator[SessionRuntime]:  # fmt: skip
    """The Session kind of an actor runtime running the worker pool and the Sessions."""
    async with open_actor_runtime(
        store, clock=clock, config=config, kinds=(WORKERS, SESSIONS),
        options={"worker_timings": timings, **options},
    ) as runtime:  # fmt: skip
        yield runtime[SESSIONS]
