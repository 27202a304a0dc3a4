"""The storage actor's writer: the one write connection, the batch loop, the answers.

The writer thread opens (and migrates) the database; from then on the batch loop, a trio
system task, takes every pending request from the mailbox up to `max_batch` and runs their
fns in the trio thread as one open transaction (`_batch.begin_batch`), then hands only the
COMMIT, with its fsync, to the writer thread (`_batch.commit_batch`), and answers the callers
once it returns (`_deliver`, after the commit listeners). The fns run where the rest of the
Node's Python runs because, run in the thread, every statement released and took back the
GIL, and each time it had to wait for the trio thread to let go of it (docs/performance.md,
"The writer's bodies in the trio thread"). The thread still runs what blocks: the COMMIT
(fsync), backups (`Outside`), the final checkpoint. The state both sides share is set up
here; the trio side of the API (admission, reads, statistics, close) is `Storage` in `_actor`.
"""

from __future__ import annotations

import contextlib
import functools
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

from ._batch import (
    FailureCounts,
    Request,
    begin_batch,
    commit_batch,
    end_batch,
    fail_batch,
    unavailable,
)
from ._cursors import CursorSigner, load_or_create_node_key
from ._events import EventRecord
from ._heads import JournalHeads
from ._node import NodeIdentity, open_node_identity
from ._readers import ReaderPool
from ._schema import migrate, read_schema_version, refuse_newer

CommitListener = Callable[[tuple[EventRecord, ...]], None]

_STOP: Final = object()
BUSY_TIMEOUT_MS: Final = 5000  # how long a BEGIN waits for another process's write lock
# What one batch's fns may do at least, whatever the recent time per request: a few slow
# requests do not shrink the batches of the many fast ones after them to one each.
MIN_BATCH_ROOM: Final = 16
_LATENCY_WINDOW: Final = 1024
# How long one batch's fns may hold the trio thread, as the batch loop sizes a batch from the
# recent time per request: the Node's other tasks (API, worker pipes) wait for it meanwhile.
BATCH_BODIES_BUDGET_S: Final = 0.025
log = logging.getLogger("maia.storage")


class _StorageWriter:
    """The actor's shared state, its batch loop and its writer thread; `Storage` is the
    trio side of the API."""

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
        self._waiting: deque[Request] = deque()  # the mailbox: admitted, not yet in a batch
        self._arrived = trio.lowlevel.ParkingLot()  # where the batch loop waits for requests
        self._conn: sqlite3.Connection | None = None  # the write connection, once open
        # The writer thread's jobs: (the batch loop's task, a function to run) or _STOP.
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._in_flight: trio.lowlevel.Task | None = None  # whose job the thread runs now
        self._job_waiter: trio.lowlevel.Task | None = None  # the loop, while it waits for one
        self._token = trio.lowlevel.current_trio_token()
        self._closed = False
        self._failure: str | None = None
        self._ready = trio.Event()
        self._stopped = trio.Event()
        self._open_error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name=f"storage:{path.name}", daemon=True)
        self._readers = ReaderPool(path, readers)
        # Counters, written by the batch loop (trio thread) only.
        self._batches = 0
        self._requests = 0
        self._failures = FailureCounts()
        self._last_batch = 0
        self._max_batch_seen = 0
        self._latencies: deque[float] = deque(maxlen=_LATENCY_WINDOW)
        self._bodies_cpu_s = 0.0  # the trio thread's CPU in `begin_batch` (`writer_cpu_s`)
        self._s_per_request = 0.0  # recent wall time of a request's fn (moving average)
        self._pending: set[Request] = set()  # trio side: admitted and not yet answered
        self._commit_listeners: list[CommitListener] = []

    def _deliver(self, batch: list[Request], events: tuple[EventRecord, ...] = ()) -> None:
        """In the trio thread: tell the commit listeners, then answer every caller of a
        committed (or failed) batch; the callers even when a listener raises what is not an
        Exception (it then propagates, after them)."""
        try:
            if events:
                for listener in tuple(self._commit_listeners):
                    try:
                        listener(events)
                    except Exception:
                        log.exception("a storage commit listener failed")
        finally:
            self._answer(batch)

    def _answer(self, batch: list[Request]) -> None:
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
        # A system task, like the thread it replaces: the caller's cancel scopes do not reach
        # it; it ends when the actor closes (or the run does).
        trio.lowlevel.spawn_system_task(self._batch_loop, name=f"storage:{self.path.name}")
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
            self._conn = conn
            self._signal(self._ready)
            self._serve()
            _checkpoint_truncate(conn)
        except BaseException as error:  # a bug in the loop itself: fail loudly, not silently
            self._failure = f"the writer thread died: {error!r}"
            self._closed = True
        finally:
            if self._in_flight is not None:  # the thread broke between a job and its answer
                broken = unavailable(self._failure or "the writer thread stopped")
                self._wake(self._in_flight, outcome.Error(broken))
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
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")  # migrations may wait
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
            # From here on the batch loop runs BEGIN in the trio thread: it must never wait for
            # another process's lock there (`_begin` waits in this thread instead).
            conn.execute("PRAGMA busy_timeout = 0")
        except BaseException:
            conn.close()
            raise
        return conn

    def _serve(self) -> None:
        """The writer thread's loop: run each job the batch loop hands over, until _STOP."""
        while True:
            item = self._queue.get()
            if item is _STOP:
                return
            task, job = item
            self._in_flight = task
            result = outcome.capture(job)
            self._in_flight = None
            self._wake(task, result)

    def _wake(self, task: trio.lowlevel.Task, result: outcome.Outcome[Any]) -> None:
        with contextlib.suppress(trio.RunFinishedError):
            self._token.run_sync_soon(self._answer_job, task, result)

    def _answer_job(self, task: trio.lowlevel.Task, result: outcome.Outcome[Any]) -> None:
        """In the trio thread: wake the batch loop with its job's outcome, unless it gave up
        waiting (the run ended after a close that timed out)."""
        if self._job_waiter is task:
            self._job_waiter = None
            trio.lowlevel.reschedule(task, outcome.Value(result))

    def _fail_queued(self) -> None:
        """In the writer thread, as it ends: answer every job still queued `unavailable`."""
        while True:
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return
            if item is not _STOP:
                error = unavailable(self._failure or "the writer thread stopped")
                self._wake(item[0], outcome.Error(error))

    # -- the batch loop (trio thread) ------------------------------------------------------

    async def _in_thread(self, job: Callable[[], Any]) -> outcome.Outcome[Any]:
        """Run `job` in the writer thread; its outcome. Not cancellable: the connection is
        the thread's until the job returns."""
        if not self._thread.is_alive():
            return outcome.Error(unavailable(self._failure or "the writer thread stopped"))
        task = trio.lowlevel.current_task()
        self._job_waiter = task
        self._queue.put((task, job))

        def abort(_: Any) -> trio.lowlevel.Abort:
            # Only once the actor is closed (the run ends after `aclose` gave up on a stuck
            # job): the loop then leaves the connection to the thread and never touches it.
            if not self._closed:
                return trio.lowlevel.Abort.FAILED
            self._job_waiter = None
            return trio.lowlevel.Abort.SUCCEEDED

        result: outcome.Outcome[Any] = await trio.lowlevel.wait_task_rescheduled(abort)
        return result

    async def _batch_loop(self) -> None:
        """Take every waiting request (up to `max_batch`) as one batch, until closed and the
        mailbox is empty; then stop the writer thread (which checkpoints and closes)."""
        conn = self._conn
        assert conn is not None
        heads = JournalHeads(conn)  # what this connection's appends left (storage/_heads.py)
        try:
            while True:
                if not self._waiting:
                    if self._closed:
                        return
                    await self._arrived.park()
                    continue
                count = min(len(self._waiting), self._max_batch, self._batch_room())
                taken = [self._waiting.popleft() for _ in range(count)]
                # A close that timed out answered some already: they must not run after that.
                batch = [request for request in taken if request in self._pending]
                if batch:
                    await self._run_batch(conn, batch, heads)
        except trio.Cancelled:
            raise  # the run ends: the finally below still stops the thread
        except BaseException as error:  # a bug in the loop itself: fail loudly, not silently
            log.exception("the storage batch loop failed")
            self._failure = f"the writer failed: {error!r}"
            self._closed = True
        finally:
            leftovers = list(self._waiting)
            self._waiting.clear()
            for request in leftovers:
                request.answer = outcome.Error(unavailable(self._failure or "storage stopped"))
            self._deliver(leftovers)
            self._queue.put(_STOP)

    async def _begin(self, conn: sqlite3.Connection, batch: list[Request]) -> bool:
        """BEGIN IMMEDIATE for `batch`, at once in the trio thread when the write lock is
        free, else waiting for it (up to BUSY_TIMEOUT_MS) in the writer thread. False, with
        every request answered `unavailable`, when SQLite could not begin."""
        try:
            conn.execute("BEGIN IMMEDIATE")
            return True
        except sqlite3.OperationalError as refused:
            if refused.sqlite_errorcode != sqlite3.SQLITE_BUSY:
                fail_batch(conn, batch, refused, self._failures)
                await trio.lowlevel.cancel_shielded_checkpoint()
                return False
        done = await self._in_thread(functools.partial(_begin_waiting, conn))
        failure: BaseException | None = (
            done.error if isinstance(done, outcome.Error) else done.unwrap()
        )
        if failure is None:
            return True
        fail_batch(conn, batch, failure, self._failures)
        return False

    def _batch_room(self) -> int:
        """How many requests the next batch may take to stay within the bodies' budget."""
        if self._s_per_request <= 0.0:
            return self._max_batch
        return max(MIN_BATCH_ROOM, int(BATCH_BODIES_BUDGET_S / self._s_per_request))

    async def _run_batch(
        self, conn: sqlite3.Connection, batch: list[Request], heads: JournalHeads
    ) -> None:
        started = time.perf_counter()  # statistics only; decides nothing
        committed: list[EventRecord] = []
        try:
            inside = [r for r in batch if not isinstance(r.fn, Outside)]
            if inside and not await self._begin(conn, inside):
                inside = []  # answered `unavailable`: SQLite could not begin
            if inside:
                cpu_started = time.thread_time()
                prepared = begin_batch(conn, inside, self._failures, heads)
                self._bodies_cpu_s += time.thread_time() - cpu_started
                per_request = (time.perf_counter() - started) / len(inside)
                if self._s_per_request <= 0.0:
                    self._s_per_request = per_request
                else:
                    self._s_per_request += (per_request - self._s_per_request) * 0.2
                if prepared is None:  # answered `unavailable`: let the rest of the Node run
                    await trio.lowlevel.cancel_shielded_checkpoint()
                else:
                    done = await self._in_thread(functools.partial(commit_batch, conn))
                    error = done.error if isinstance(done, outcome.Error) else done.unwrap()
                    end_batch(conn, prepared, error, committed, self._failures, heads)
            for request in batch:
                if isinstance(request.fn, Outside) and request in self._pending:
                    request.answer = await self._in_thread(
                        functools.partial(outcome.capture, request.fn, conn)
                    )
                    if isinstance(request.answer, outcome.Value):
                        request.answer = request.answer.value  # the fn's own outcome
        finally:
            # Even if the loop itself broke, every request of the batch gets an answer.
            for request in batch:
                if request.answer is None:
                    request.answer = outcome.Error(unavailable("the writer failed"))
            self._batches += 1
            self._requests += len(batch)
            self._last_batch = len(batch)
            self._max_batch_seen = max(self._max_batch_seen, len(batch))
            self._latencies.append((time.perf_counter() - started) * 1000.0)
            self._deliver(batch, tuple(committed))


@attrs.frozen
class Outside:
    """Marks a writer-thread job that must run outside any transaction (backup)."""

    fn: Callable[[sqlite3.Connection], Any]

    def __call__(self, conn: sqlite3.Connection) -> Any:
        return self.fn(conn)


def _begin_waiting(conn: sqlite3.Connection) -> BaseException | None:
    """In the writer thread: BEGIN IMMEDIATE, waiting up to BUSY_TIMEOUT_MS for another
    process's write lock; the error if it could not."""
    try:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        try:
            conn.execute("BEGIN IMMEDIATE")
        finally:
            conn.execute("PRAGMA busy_timeout = 0")
    except sqlite3.Error as error:
        return error
    return None


def _checkpoint_truncate(conn: sqlite3.Connection) -> None:
    """On a clean stop, move every committed page into the database file and empty the WAL,
    so `maia.db` alone is complete (a copy of it without `-wal` loses nothing). A reader
    still inside a read leaves the checkpoint partial: the WAL is then kept, never lost."""
    with contextlib.suppress(sqlite3.Error):
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")  # the thread may wait
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
