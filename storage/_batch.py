"""One group-commit transaction of the storage actor: each request isolated from the others.

`run_transaction` opens `BEGIN IMMEDIATE`, runs every request of a batch and commits once.
Guarded requests (the default) run each in its own SAVEPOINT, so one that raises rolls back
alone and gets its own error; the first of a transaction needs none, since rolling the whole
(still empty) transaction back undoes only its writes (a batch of one, the common case at low
load, then runs no savepoint at all). A savepoint costs more than its two statements: every page the
request touches is first copied to the sub-journal (~20% of the writer's time for a
representative mutation, see docs/storage.md). Requests submitted as replayable promise that
their fn touches nothing but the connection, so they run after the guarded ones under one
shared savepoint (none when they are the transaction's first writes: rolling the whole
transaction back then undoes only theirs); if one raises, that work rolls back and the others
run again one savepoint each: every request runs at most twice and a failure is still only its
own.

If the COMMIT (or a savepoint statement) fails, no request is acknowledged: each gets
`unavailable`, and nothing of the batch is in the database.
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Callable
from typing import Any

import attrs
import outcome
import trio

from maia.core import MaiaError

from ._events import EventRecord, collect_appended, still_stored
from ._heads import JournalHeads, active_heads, use_heads


def forget_heads(conn: sqlite3.Connection) -> None:
    heads = active_heads(conn)
    if heads is not None:
        heads.forget()


@attrs.define(eq=False)
class Request:
    """One write waiting for, or holding, its answer."""

    fn: Callable[[sqlite3.Connection], Any]
    task: trio.lowlevel.Task
    replayable: bool = False  # fn touches nothing but the connection: it may run twice
    abandoned: bool = False
    answer: outcome.Outcome[Any] | None = None


@attrs.define
class FailureCounts:
    """Failures seen by the batch loop (for `Storage.statistics`)."""

    requests: int = 0  # requests whose fn raised (their writes rolled back)
    commits: int = 0  # transactions that failed (none of their requests acknowledged)


def unavailable(reason: str) -> MaiaError:
    """The `unavailable` error a caller gets when storage could not answer its request."""
    return MaiaError("unavailable", f"storage is unavailable: {reason}", {"target": "storage"})


def run_transaction(
    conn: sqlite3.Connection,
    batch: list[Request],
    committed: list[EventRecord],
    failures: FailureCounts,
    heads: JournalHeads | None = None,
) -> None:
    """Run `batch` in one transaction and set every request's answer; on commit, add the
    batch's surviving events to `committed` in journal order. Raises nothing of SQLite's.
    `heads`: the connection's journal heads, kept across transactions (`storage/_heads.py`).

    The three steps the storage actor runs apart (the bodies in the trio thread, the COMMIT
    with its fsync in the writer thread): `begin_batch`, `commit_batch`, `end_batch`."""
    prepared = begin_batch(conn, batch, failures, heads)
    if prepared is not None:
        end_batch(conn, prepared, commit_batch(conn), committed, failures, heads)


@attrs.define(eq=False)
class Prepared:
    """A batch whose requests all ran in an open transaction, waiting for its COMMIT."""

    batch: list[Request]
    surviving: list[EventRecord]  # the events its rows still hold, in journal order


def begin_batch(
    conn: sqlite3.Connection,
    batch: list[Request],
    failures: FailureCounts,
    heads: JournalHeads | None = None,
) -> Prepared | None:
    """BEGIN IMMEDIATE and run every request of `batch`, each answered (a request that raised
    rolled back alone); the transaction is left open for `commit_batch`. None when SQLite
    failed on the batch's own statements: then nothing of it is written and every request
    is answered `unavailable`. Raises nothing of SQLite's."""
    appended: list[EventRecord] = []
    collect_appended(appended)
    use_heads(heads)
    # One cursor for the batch's own statements (BEGIN, the savepoints): cheaper than
    # `conn.execute`, which makes a cursor per call, twice per request.
    control = conn.cursor()
    failed_before = failures.requests
    try:
        if not conn.in_transaction:  # the storage actor's loop began it already
            control.execute("BEGIN IMMEDIATE")
        fresh = True  # nothing of the batch written yet: its first request needs no savepoint
        for request in batch:
            if request.replayable:
                continue
            if fresh:
                fresh = _first(conn, request, appended, failures, control)
            else:
                _guarded(conn, request, appended, failures, control)
        replayable = [request for request in batch if request.replayable]
        if replayable:
            _run_replayable(conn, replayable, appended, failures, control, fresh=fresh)
        if heads is not None and failures.requests != failed_before:
            heads.forget()  # a failed request's events were rolled back: read them again
        # What the commit listeners get: a savepoint of a fn's own may have taken some out.
        return Prepared(batch, still_stored(conn, appended, heads))
    except sqlite3.Error as error:
        fail_batch(conn, batch, error, failures, heads)
        return None
    finally:
        collect_appended(None)
        use_heads(None)


def commit_batch(conn: sqlite3.Connection) -> sqlite3.Error | None:
    """COMMIT the open transaction (its fsync: the step the writer thread runs); the error
    SQLite raised, if it did."""
    try:
        conn.execute("COMMIT")
    except sqlite3.Error as error:
        return error
    return None


def end_batch(
    conn: sqlite3.Connection,
    prepared: Prepared,
    error: BaseException | None,
    committed: list[EventRecord],
    failures: FailureCounts,
    heads: JournalHeads | None = None,
) -> None:
    """After `commit_batch`: the batch's surviving events to `committed`, or, if the COMMIT
    failed (or never ran: `error` is then why), every request answered `unavailable` and
    the transaction rolled back (nothing of the batch is written)."""
    if error is None:
        committed.extend(prepared.surviving)
    else:
        fail_batch(conn, prepared.batch, error, failures, heads)


def fail_batch(
    conn: sqlite3.Connection,
    batch: list[Request],
    error: BaseException,
    failures: FailureCounts,
    heads: JournalHeads | None = None,
) -> None:
    """Roll the batch's transaction back (if one is open) and answer every request
    `unavailable`: nothing of it is written."""
    if heads is not None:
        heads.forget()  # rolled back: what the batch appended is gone
    failures.commits += 1
    with contextlib.suppress(sqlite3.Error):  # a closed connection raises for the check too
        if conn.in_transaction:
            conn.execute("ROLLBACK")
    failure = unavailable(f"the transaction failed ({error}); nothing was written")
    for request in batch:
        request.answer = outcome.Error(failure)


def _first(
    conn: sqlite3.Connection,
    request: Request,
    appended: list[EventRecord],
    failures: FailureCounts,
    control: sqlite3.Cursor,
) -> bool:
    """Run the transaction's first request without a savepoint: if it raises, roll back the
    whole transaction (it holds only this request's writes) and begin a new one. Whether the
    transaction is still empty (the request failed)."""
    try:
        value = request.fn(conn)
    except BaseException as error:
        del appended[:]  # rolled back: these events never happened
        forget_heads(conn)  # the lock is free until BEGIN: another writer may append
        control.execute("ROLLBACK")
        control.execute("BEGIN IMMEDIATE")
        failures.requests += 1
        request.answer = outcome.Error(error)
        return True
    request.answer = outcome.Value(value)
    return False


def _guarded(
    conn: sqlite3.Connection,
    request: Request,
    appended: list[EventRecord],
    failures: FailureCounts,
    control: sqlite3.Cursor | None = None,
) -> None:
    """Run one request in its own SAVEPOINT: if it raises, only its writes roll back."""
    control = control or conn.cursor()
    control.execute("SAVEPOINT request")
    mark = len(appended)
    try:
        value = request.fn(conn)
    except BaseException as error:
        del appended[mark:]  # rolled back: these events never happened
        control.execute("ROLLBACK TO request")
        control.execute("RELEASE request")
        failures.requests += 1
        request.answer = outcome.Error(error)
    else:
        control.execute("RELEASE request")
        request.answer = outcome.Value(value)


def _run_replayable(
    conn: sqlite3.Connection,
    requests: list[Request],
    appended: list[EventRecord],
    failures: FailureCounts,
    control: sqlite3.Cursor,
    *,
    fresh: bool = False,
) -> None:
    """Run replayable requests under ONE savepoint. If one raises, roll that savepoint back
    (only replayable work is undone), keep its error, and run the others again one savepoint
    each: the outcome is that of a serial order in which the failed request ran after those
    before it and changed nothing.

    `fresh`: nothing else of the transaction is written yet, so it needs no savepoint (two
    statements and the savepoint's copies of the pages it touches, per commit): rolling the
    whole transaction back undoes the same work, and a new one begins for the others."""
    if not fresh:
        control.execute("SAVEPOINT replayable")
    mark = len(appended)
    for index, request in enumerate(requests):
        try:
            value = request.fn(conn)
        except BaseException as error:
            del appended[mark:]
            if fresh:
                forget_heads(conn)  # the lock is free until BEGIN: another writer may append
                control.execute("ROLLBACK")
                control.execute("BEGIN IMMEDIATE")
            else:
                control.execute("ROLLBACK TO replayable")
                control.execute("RELEASE replayable")
            failures.requests += 1
            request.answer = outcome.Error(error)
            for other in requests[:index] + requests[index + 1 :]:
                _guarded(conn, other, appended, failures, control)
            return
        request.answer = outcome.Value(value)
    if not fresh:
        control.execute("RELEASE replayable")
