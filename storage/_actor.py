"""The storage actor: one writer thread, one SQLite connection, group commit.

All writes of the Node go through `Storage.write(fn)`. Trio tasks put requests in a bounded
mailbox; one dedicated thread owns the write connection, takes every pending request (up to
`max_batch`), opens one `BEGIN IMMEDIATE` transaction, runs each request's `fn` inside its own
SAVEPOINT (a request that raises rolls back only its savepoint), commits once, and only then
answers each caller from the trio thread. If the commit fails, no request of the batch is
acknowledged: each gets `unavailable`. One fsync serves the whole batch, which is where the
throughput comes from (see docs/storage.md for the figures).

Requests submitted with `replayable=True` share one savepoint instead (see `_batch`).

Reads run on a small pool of read-only connections in trio's worker threads (WAL lets them
read beside the writer), each `fn` in its own short read transaction.

When the actor stops, requests still queued fail with `unavailable`; nothing waits forever.
A caller cancelled while its request is queued does not learn whether it committed: that is
what idempotency keys are for.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import sqlite3
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, Final, TypeVar

import attrs
import outcome
import trio

from maia.protocol import Clock, MaiaError

from ._batch import FailureCounts, Request, run_transaction, unavailable
from ._cursors import CursorSigner, load_or_create_node_key
from ._events import EventRecord
from ._node import NodeIdentity, open_node_identity
from ._readers import ReaderPool
from ._schema import migrate, read_schema_version, refuse_newer

T = TypeVar("T")
WriteFn = Callable[[sqlite3.Connection], T]  # what write and read run, in a storage thread
CommitListener = Callable[[tuple[EventRecord, ...]], None]

SYNCHRONOUS_MODES: Final = frozenset({"OFF", "NORMAL", "FULL", "EXTRA"})
_STOP: Final = object()
_LATENCY_WINDOW: Final = 1024
log = logging.getLogger("maia.storage")


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


class Storage:
    """The handle trio code uses; made by `open_storage`, never directly."""

    def __init__(
        self,
        path: Path,
        *,
        clock: Clock,
        synchronous: str,
        mailbox_size: int,
        admission_timeout_s: float,
        max_batch: int,
        readers: int,
        key_path: Path,
    ) -> None:
        self.path = path
        self._key_path = key_path
        self._cursors: CursorSigner | None = None
        self.clock = clock
        self.identity: NodeIdentity | None = None
        self._synchronous = synchronous
        self._mailbox_size = mailbox_size
        self._admission_timeout_s = admission_timeout_s
        self._max_batch = max_batch
        self._slots = trio.Semaphore(mailbox_size)
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._token = trio.lowlevel.current_trio_token()
        self._closed = False
        self._failure: str | None = None
        self._ready = trio.Event()
        self._stopped = trio.Event()
        self._open_error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name=f"storage:{path.name}", daemon=True)
        self._readers = ReaderPool(path, readers)
        # Counters, written by the writer thread only; read as a racy but harmless snapshot.
        self._batches = 0
        self._requests = 0
        self._failures = FailureCounts()
        self._last_batch = 0
        self._max_batch_seen = 0
        self._latencies: deque[float] = deque(maxlen=_LATENCY_WINDOW)
        self._pending: set[Request] = set()  # trio side: admitted and not yet answered
        self._commit_listeners: list[CommitListener] = []

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
        """Run `fn(conn)` in the writer thread; return its result once its batch committed.

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
        self._queue.put(request)

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
        left out). A listener must not block; one that raises is logged and kept.
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

        await self.write(_Outside(copy))

    def _deliver(self, batch: list[Request], events: tuple[EventRecord, ...] = ()) -> None:
        """In the trio thread: tell the commit listeners, then answer every caller of a
        committed (or failed) batch."""
        if events:
            for listener in tuple(self._commit_listeners):
                try:
                    listener(events)
                except Exception:
                    log.exception("a storage commit listener failed")
        for request in batch:
            if request not in self._pending:
                continue  # already failed by a close that timed out
            self._pending.discard(request)
            self._slots.release()
            if not request.abandoned:
                assert request.answer is not None
                trio.lowlevel.reschedule(request.task, request.answer)

    def _signal(self, event: trio.Event) -> None:
        with contextlib.suppress(trio.RunFinishedError):
            self._token.run_sync_soon(event.set)

    async def _start(self, open_timeout_s: float) -> None:
        self._thread.start()
        with trio.fail_after(open_timeout_s):
            await self._ready.wait()
        if self._open_error is not None:
            await self._join(open_timeout_s)
            raise self._open_error
        self._readers.open()

    async def aclose(self, timeout_s: float = 30.0) -> None:
        """Stop taking requests, finish the batch in progress, fail what is still queued."""
        if not self._closed:
            self._closed = True
            self._queue.put(_STOP)
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

    async def _join(self, timeout_s: float) -> None:
        with trio.move_on_after(timeout_s):
            await self._stopped.wait()

    # -- writer thread ---------------------------------------------------------------------

    def _run(self) -> None:
        conn: sqlite3.Connection | None = None
        try:
            try:
                conn = self._open_connection()
            except BaseException as error:
                self._open_error = error
                self._closed = True
                self._signal(self._ready)
                return
            self._signal(self._ready)
            self._serve(conn)
        except BaseException as error:  # a bug in the loop itself: fail loudly, not silently
            self._failure = f"the writer thread died: {error!r}"
            self._closed = True
        finally:
            self._fail_queued()
            if conn is not None:
                conn.close()
            self._signal(self._stopped)

    def _open_connection(self) -> sqlite3.Connection:
        refuse_newer(read_schema_version(self.path), self.path)
        conn = sqlite3.connect(self.path, isolation_level=None, check_same_thread=False)
        try:
            conn.execute("PRAGMA journal_mode = WAL")
            conn.execute(f"PRAGMA synchronous = {self._synchronous}")
            conn.execute("PRAGMA foreign_keys = ON")
            conn.execute("PRAGMA busy_timeout = 5000")
            # 64 MiB of page cache: client IDs (commandId) are random, so their index inserts
            # touch pages all over it.
            conn.execute("PRAGMA cache_size = -65536")
            conn.execute("PRAGMA temp_store = MEMORY")
            migrate(conn, self.path)
            self.identity = open_node_identity(conn, self.clock.wall_ms())
            self._cursors = CursorSigner(
                load_or_create_node_key(self._key_path),
                node_id=self.identity.node_id,
                node_epoch=self.identity.epoch,
                clock=self.clock,
            )
        except BaseException:
            conn.close()
            raise
        return conn

    def _serve(self, conn: sqlite3.Connection) -> None:
        while True:
            first = self._queue.get()
            if first is _STOP:
                return
            batch: list[Request] = [first]
            committed: list[EventRecord] = []
            stop = False
            while len(batch) < self._max_batch:
                try:
                    item = self._queue.get_nowait()
                except queue.Empty:
                    break
                if item is _STOP:
                    stop = True
                    break
                batch.append(item)
            try:
                self._run_batch(conn, batch, committed)
            finally:
                # Even if the loop itself broke, every request of the batch gets an answer.
                for request in batch:
                    if request.answer is None:
                        request.answer = outcome.Error(unavailable("the writer failed"))
                with contextlib.suppress(trio.RunFinishedError):
                    self._token.run_sync_soon(self._deliver, batch, tuple(committed))
            if stop:
                return

    def _run_batch(
        self, conn: sqlite3.Connection, batch: list[Request], committed: list[EventRecord]
    ) -> None:
        started = time.perf_counter()  # statistics only; decides nothing
        outside = [r for r in batch if isinstance(r.fn, _Outside)]
        inside = [r for r in batch if not isinstance(r.fn, _Outside)]
        if inside:
            run_transaction(conn, inside, committed, self._failures)
        for request in outside:
            request.answer = outcome.capture(request.fn, conn)
        self._batches += 1
        self._requests += len(batch)
        self._last_batch = len(batch)
        self._max_batch_seen = max(self._max_batch_seen, len(batch))
        self._latencies.append((time.perf_counter() - started) * 1000.0)

    def _fail_queued(self) -> None:
        """Answer every request still in the mailbox with `unavailable`."""
        leftovers: list[Request] = []
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                break
            if item is not _STOP:
                item.answer = outcome.Error(unavailable(self._failure or "storage stopped"))
                leftovers.append(item)
        if leftovers:
            with contextlib.suppress(trio.RunFinishedError):
                self._token.run_sync_soon(self._deliver, leftovers)


@attrs.frozen
class _Outside:
    """Marks a writer-thread job that must run outside any transaction (backup)."""

    fn: Callable[[sqlite3.Connection], Any]

    def __call__(self, conn: sqlite3.Connection) -> Any:
        return self.fn(conn)


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
) -> AsyncIterator[Storage]:
    """Open (creating and migrating as needed) the database at `path` and run its actor.

    Each open increments the node epoch. Raises `storage_version_unsupported` for a database
    from a newer Maia (left untouched), `configuration_invalid` for a node key others can
    read, ValueError for a bad setting, sqlite3.Error if the file cannot be opened or
    migrated. The node key defaults to `<db dir>/secrets/node.key`.
    """
    mode = synchronous.upper()
    if mode not in SYNCHRONOUS_MODES:
        raise ValueError(f"synchronous must be one of {sorted(SYNCHRONOUS_MODES)}")
    if mailbox_size < 1 or max_batch < 1 or readers < 1:
        raise ValueError("mailbox_size, max_batch and readers must be positive")
    store = Storage(
        path,
        clock=clock,
        synchronous=mode,
        mailbox_size=mailbox_size,
        admission_timeout_s=admission_timeout_s,
        max_batch=max_batch,
        readers=readers,
        key_path=key_path or path.parent / "secrets" / "node.key",
    )
    await store._start(open_timeout_s)
    try:
        yield store
    finally:
        await store.aclose()
