"""The storage actor's writer thread: the one write connection, the batch loop, the answers.

The thread opens (and migrates) the database, then takes every pending request from the
mailbox queue up to `max_batch`, runs them as one transaction (`_batch.run_transaction`) and
hands the batch back to the trio thread, where `_deliver` tells the commit listeners and
answers the callers. The state both sides share is set up here; the trio side (admission,
reads, statistics, close) is `Storage` in `_actor`.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import sqlite3
import threading
import time
from collections import deque
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import attrs
import outcome
import trio

from maia.core import Clock

from ._batch import FailureCounts, Request, run_transaction, unavailable
from ._cursors import CursorSigner, load_or_create_node_key
from ._events import EventRecord
from ._heads import JournalHeads
from ._node import NodeIdentity, open_node_identity
from ._readers import ReaderPool
from ._schema import migrate, read_schema_version, refuse_newer

CommitListener = Callable[[tuple[EventRecord, ...]], None]

_STOP: Final = object()
_LATENCY_WINDOW: Final = 1024
log = logging.getLogger("maia.storage")


class _StorageWriter:
    """The actor's shared state and its writer thread; `Storage` is the trio side."""

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
        cache_mib: int,
    ) -> None:
        self.path = path
        self._key_path = key_path
        self._cursors: CursorSigner | None = None
        self.clock = clock
        self.identity: NodeIdentity | None = None
        self._synchronous = synchronous
        self.cache_mib = cache_mib
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
            _checkpoint_truncate(conn)
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
            # Bounded (`cache_mib`, 1 MiB by default): a cache that grows with the database
            # grows the Node's RSS; pages it drops come back from the OS page cache.
            conn.execute(f"PRAGMA cache_size = -{self.cache_mib * 1024}")
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
        heads = JournalHeads(conn)  # what this connection's appends left (storage/_heads.py)
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
                self._run_batch(conn, batch, committed, heads)
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
        self,
        conn: sqlite3.Connection,
        batch: list[Request],
        committed: list[EventRecord],
        heads: JournalHeads | None = None,
    ) -> None:
        started = time.perf_counter()  # statistics only; decides nothing
        outside = [r for r in batch if isinstance(r.fn, _Outside)]
        inside = [r for r in batch if not isinstance(r.fn, _Outside)]
        if inside:
            run_transaction(conn, inside, committed, self._failures, heads)
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


def _checkpoint_truncate(conn: sqlite3.Connection) -> None:
    """On a clean stop, move every committed page into the database file and empty the WAL,
    so `maia.db` alone is complete (a copy of it without `-wal` loses nothing). A reader
    still inside a read leaves the checkpoint partial: the WAL is then kept, never lost."""
    with contextlib.suppress(sqlite3.Error):
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
