"""The storage actor: one write connection, a batch loop, group commit.

All writes of the Node go through `Storage.write(fn)`. Trio tasks put requests in a bounded
mailbox; the batch loop (a trio system task) takes every pending request (up to `max_batch`,
fewer when recent requests were slow: `BATCH_BODIES_BUDGET_S`), opens one `BEGIN IMMEDIATE`
transaction, runs each request's `fn` inside its own SAVEPOINT (a request that raises rolls
back only its savepoint), hands the COMMIT to the writer thread, and only then answers each
caller. If the commit fails, no request of the batch is acknowledged: each gets
`unavailable`. One fsync serves the whole batch, which is where the throughput comes from
(see docs/storage.md for the figures). The fns run in the trio thread, so they must not
block; the writer thread runs what does (the COMMIT's fsync, backups, the last checkpoint).

Requests submitted with `replayable=True` share one savepoint instead (see `_batch`).

Reads run on a small pool of read-only connections in their own threads (WAL lets them
read beside the writer), each `fn` in its own short read transaction.

When the actor stops, requests still queued fail with `unavailable`; nothing waits forever.
A caller cancelled while its request is queued does not learn whether it committed: that is
what idempotency keys are for.

This module is the trio side (admission to the mailbox, reads, statistics, close); the
batch loop, the writer thread and the state they share live in `_writer`.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
from collections.abc import AsyncIterator, Callable, Mapping
from pathlib import Path
from typing import Any, Final, TypeVar

import attrs
import outcome
import trio

from maia.core import Clock, MaiaError

from ._batch import Request, unavailable
from ._cursors import CursorSigner
from ._writer import CommitListener, Outside, _StorageWriter

T = TypeVar("T")
WriteFn = Callable[[sqlite3.Connection], T]  # what write and read run, in a storage thread

SYNCHRONOUS_MODES: Final = frozenset({"OFF", "NORMAL", "FULL", "EXTRA"})
# The writer's SQLite page cache, in MiB: small by default, since hot pages stay in the OS
# page cache anyway and a large one grows the Node's RSS with the database (docs/storage.md;
# 4 MiB until issue 21's memory goal: 3 MiB more RSS once the database outgrew it).
DEFAULT_CACHE_MIB: Final = 1
MAX_CACHE_MIB: Final = 1024
CACHE_MIB_VARIABLE: Final = "MAIA_STORAGE_CACHE_MIB"


def cache_mib_setting(environ: Mapping[str, str] | None = None) -> int:
    """The writer's page cache size in MiB: `MAIA_STORAGE_CACHE_MIB` if set, else the default.

    Raises ValueError naming the variable for a value that is not an integer 1-1024.
    """
    raw = (os.environ if environ is None else environ).get(CACHE_MIB_VARIABLE)
    if raw is None or raw.strip() == "":
        return DEFAULT_CACHE_MIB
    try:
        value = int(raw.strip())
    except ValueError:
        value = 0
    if not 1 <= value <= MAX_CACHE_MIB:
        raise ValueError(
            f"{CACHE_MIB_VARIABLE} must be an integer from 1 to {MAX_CACHE_MIB} (MiB), not {raw!r}"
        )
    return value


@attrs.frozen
class StorageStatistics:
    """A snapshot of the storage actor (trio's `statistics()` convention)."""

    mailbox_depth: int  # requests admitted and not yet answered
    mailbox_size: int
    batches: int
    requests: int
    failed_requests: int  # requests whose fn raised (their savepoint rolled back)
    failed_commits: int  # batches whose COMMIT failed (none of their requests acknowledged)
    last_batch_size: int
    max_batch_size: int
    mean_batch_size: float
    commit_latency_p50_ms: float  # transaction time of recent batches (BEGIN..COMMIT)
    commit_latency_max_ms: float
    closed: bool


class Storage(_StorageWriter):
    """The handle trio code uses; made by `open_storage`, never directly."""

    # -- trio side -------------------------------------------------------------------------

    @property
    def node_id(self) -> str:
        assert self.identity is not None
        return self.identity.node_id

    @property
    def node_epoch(self) -> int:
        assert self.identity is not None
        return self.identity.epoch

    @property
    def cursors(self) -> CursorSigner:
        """Signs and opens this Node run's cursors (key from the 0600 node key file)."""
        assert self._cursors is not None
        return self._cursors

    @property
    def closed(self) -> bool:
        """Whether the actor stopped taking requests."""
        return self._closed

    async def write(self, fn: Callable[[sqlite3.Connection], T], *, replayable: bool = False) -> T:
        """Run `fn(conn)` in the next batch (in the trio thread: it must not block); return its
        result once its batch committed.

        `replayable=True` declares that `fn` has no effect outside the connection (no Python
        state changed, nothing sent), so it may run a second time after its first run was
        rolled back: it then runs without a savepoint of its own, which costs ~20% less in
        the writer (see docs/storage.md). Its failure is still its own.

        Raises whatever `fn` raised (only its writes rolled back), `overloaded` when the
        mailbox stays full for the admission bound, `unavailable` when the commit failed or
        the actor is stopped.
        """
        if self._closed:
            raise unavailable(self._failure or "the storage actor is stopped")
        try:
            self._slots.acquire_nowait()
        except trio.WouldBlock:
            acquired = False
            with trio.move_on_after(self._admission_timeout_s):
                await self._slots.acquire()
                acquired = True
            if not acquired:
                raise MaiaError(
                    "overloaded",
                    f"storage is overloaded: {self._mailbox_size} requests waiting for "
                    f"{self._admission_timeout_s} s",
                    {"target": "storage"},
                ) from None
            if self.closed:  # closed while this caller waited for a slot
                self._slots.release()
                raise unavailable(self._failure or "the storage actor is stopped") from None
        request = Request(fn, trio.lowlevel.current_task(), replayable)
        self._pending.add(request)
        self._waiting.append(request)
        self._arrived.unpark()

        def abort(_: Any) -> trio.lowlevel.Abort:
            request.abandoned = True  # it still runs; its answer is dropped
            return trio.lowlevel.Abort.SUCCEEDED

        result: T = await trio.lowlevel.wait_task_rescheduled(abort)
        return result

    async def read(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        """Run `fn(conn)` on a read-only connection in a worker thread, in one read transaction.

        Sees every write acknowledged before the call. Raises what `fn` raised, or
        `unavailable` once the actor is stopped.
        """
        if self._closed:
            raise unavailable(self._failure or "the storage actor is stopped")
        return await self._readers.run(fn)

    def add_commit_listener(self, listener: CommitListener) -> Callable[[], None]:
        """Call `listener(events)` in the trio thread after each commit that appended events,
        before any caller of that batch is answered; returns the function that removes it.

        `events` are the batch's committed events in journal order (rolled-back savepoints
        left out). A listener must not block; one that raises an Exception is logged and kept.
        One that raises anything else stops the writer (later calls are `unavailable`), after
        the batch's callers are answered.
        """
        self._commit_listeners.append(listener)

        def remove() -> None:
            with contextlib.suppress(ValueError):
                self._commit_listeners.remove(listener)

        return remove

    def statistics(self) -> StorageStatistics:
        latencies = sorted(self._latencies)
        return StorageStatistics(
            mailbox_depth=self._mailbox_size - self._slots.value,
            mailbox_size=self._mailbox_size,
            batches=self._batches,
            requests=self._requests,
            failed_requests=self._failures.requests,
            failed_commits=self._failures.commits,
            last_batch_size=self._last_batch,
            max_batch_size=self._max_batch_seen,
            mean_batch_size=self._requests / self._batches if self._batches else 0.0,
            commit_latency_p50_ms=latencies[len(latencies) // 2] if latencies else 0.0,
            commit_latency_max_ms=latencies[-1] if latencies else 0.0,
            closed=self._closed,
        )

    def writer_cpu_s(self) -> float:
        """The CPU time the writer's work has used, in seconds, while the actor runs: the
        writer thread's clock (COMMITs, backups) plus the trio thread's CPU in the batches'
        fns (`begin_batch`, timed by the batch loop). 0.0 before it started, after it ended,
        or where the platform has no thread clocks. For benchmarks: steadier than rates."""
        ident = self._thread.ident
        # An ended thread's ID may name another thread's clock, or none: ask only a live one.
        if ident is None or not self._thread.is_alive() or self._closed:
            return 0.0
        if not hasattr(time, "pthread_getcpuclockid"):
            return 0.0
        try:
            return time.clock_gettime(time.pthread_getcpuclockid(ident)) + self._bodies_cpu_s
        except OSError:
            return 0.0

    async def backup_to(self, target: Path) -> None:
        """Copy the database to `target` with SQLite's online backup API (a consistent copy).

        Runs in the writer thread between batches. Raises `unavailable` if stopped.
        """

        def copy(conn: sqlite3.Connection) -> None:
            destination = sqlite3.connect(target)
            try:
                conn.backup(destination)
            finally:
                destination.close()

        await self.write(Outside(copy))

    async def aclose(self, timeout_s: float = 30.0) -> None:
        """Stop taking requests, finish the batch in progress, fail what is still queued."""
        if not self._closed:
            self._closed = True
            self._arrived.unpark_all()  # the batch loop ends once the mailbox is empty
        with trio.CancelScope(shield=True):
            await self._join(timeout_s)
            self._readers.close()
        # A writer stuck past the deadline: its callers must not wait forever.
        stuck = list(self._pending)
        self._pending.clear()
        for request in stuck:
            self._slots.release()
            if not request.abandoned:
                error = unavailable("the storage actor stopped before answering")
                trio.lowlevel.reschedule(request.task, outcome.Error(error))


@contextlib.asynccontextmanager
async def open_storage(
    path: Path,
    *,
    clock: Clock,
    synchronous: str = "FULL",
    mailbox_size: int = 4096,
    admission_timeout_s: float = 5.0,
    max_batch: int = 512,
    readers: int = 2,
    open_timeout_s: float = 120.0,
    key_path: Path | None = None,
    cache_mib: int | None = None,
) -> AsyncIterator[Storage]:
    """Open (creating and migrating as needed) the database at `path` and run its actor.

    Each open increments the node epoch. Raises `storage_version_unsupported` for a database
    from a newer Maia (left untouched), `configuration_invalid` for a node key others can
    read, ValueError for a bad setting, sqlite3.Error if the file cannot be opened or
    migrated. The node key defaults to `<db dir>/secrets/node.key`. `cache_mib` bounds the
    writer's page cache (None: `cache_mib_setting()`, from `MAIA_STORAGE_CACHE_MIB` or 1).
    """
    mode = synchronous.upper()
    if mode not in SYNCHRONOUS_MODES:
        raise ValueError(f"synchronous must be one of {sorted(SYNCHRONOUS_MODES)}")
    if mailbox_size < 1 or max_batch < 1 or readers < 1:
        raise ValueError("mailbox_size, max_batch and readers must be positive")
    cache = cache_mib_setting() if cache_mib is None else cache_mib
    if not 1 <= cache <= MAX_CACHE_MIB:
        raise ValueError(f"cache_mib must be 1-{MAX_CACHE_MIB}, not {cache}")
    store = Storage(
        path,
        clock=clock,
        synchronous=mode,
        mailbox_size=mailbox_size,
        admission_timeout_s=admission_timeout_s,
        max_batch=max_batch,
        readers=readers,
        key_path=key_path or path.parent / "secrets" / "node.key",
        cache_mib=cache,
    )
    await store._start(open_timeout_s)
    try:
        yield store
    finally:
        await store.aclose()
