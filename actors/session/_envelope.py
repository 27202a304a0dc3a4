"""The envelope of a Session's events: which command, dispatch and attempt each descends from.

A client command's events get its correlation through `run_mutation`. A turn's dispatch is
an activation: it runs in the correlation of the turn's own `turn.send` (even when another
turn's end moved the queue), gets a new activation ID and the worker's attempt, and its
event becomes the cause of every event the worker's progress on that turn writes — the
actor opens `commit_cause` around each transaction: the dispatched turn's cause, or, while
a worker starts for waiting turns, the first waiting turn's send.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from maia.core import new_id
from storage import Envelope, command_correlation, current_envelope, event_context

from ._lifecycles import TurnState
from ._store import Draft

_DISPATCHED = (TurnState.DISPATCHING, TurnState.RUNNING)


def running_cause(memory: Draft) -> Envelope:
    """The envelope of the dispatched turn's worker events (empty when none runs)."""
    for memo in memory.turns.values():
        if memo.cause is not None and memo.state in _DISPATCHED:
            return memo.cause
    return Envelope()


def commit_cause(conn: sqlite3.Connection, memory: Draft) -> Envelope:
    """What a transaction of the actor descends from: the dispatched turn's cause; else,
    while turns wait (the worker starting for them), the first waiting turn's send; else
    nothing (a root: an idle release, a recovery)."""
    running = running_cause(memory)
    if running.causation_id is not None:
        return running
    waiting = next((m for m in memory.turns.values() if m.state is TurnState.QUEUED), None)
    if waiting is None:
        return running
    correlation = _send_correlation(conn, draft=memory, turn_id=waiting.turn_id)
    return Envelope(correlation, correlation)


def _send_correlation(conn: sqlite3.Connection, *, draft: Draft, turn_id: str) -> str | None:
    """The correlation of `turn_id`'s turn.send: kept from the send by this actor, else its
    receipt's (a turn loaded from storage)."""
    memo = draft.turns.get(turn_id)
    if memo is not None and memo.correlation is not None:
        return memo.correlation
    return command_correlation(conn, turn_id, "turn.send")


def dispatch_context(conn: sqlite3.Connection, draft: Draft, turn_id: str,
                     worker: Any) -> _Dispatching:  # fmt: skip
    """Dispatch `turn_id` in its own correlation as a new activation on `worker`'s attempt;
    its memo keeps the cause its worker's events will carry."""
    return _Dispatching(conn, draft, turn_id, worker)


class _Dispatching:
    """`dispatch_context`'s block: a plain class, entered once per dispatch (a generator
    context manager cost a third of its 9 µs)."""

    __slots__ = (
        "_activation",
        "_attempt",
        "_correlation",
        "_draft",
        "_first",
        "_inner",
        "_turn_id",
    )  # fmt: skip

    def __init__(self, conn: sqlite3.Connection, draft: Draft, turn_id: str,
                 worker: Any) -> None:  # fmt: skip
        correlation = _send_correlation(conn, draft=draft, turn_id=turn_id)
        if correlation is None:  # sent in this very transaction: the send's own context
            correlation = current_envelope().correlation_id
        self._correlation = correlation
        self._attempt = getattr(worker, "attempt_id", None)
        self._activation = new_id("activation")
        self._draft, self._turn_id = draft, turn_id
        self._first = 0
        self._inner = event_context(Envelope(correlation, attempt_id=self._attempt,
                                             activation_id=self._activation))  # fmt: skip

    def __enter__(self) -> None:
        self._first = len(self._draft.event_ids)
        self._inner.__enter__()

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> None:
        self._inner.__exit__()
        if kind is not None:  # the dispatch failed: its memo keeps no cause
            return
        draft = self._draft
        memo = draft.memo(self._turn_id)
        if memo is not None and len(draft.event_ids) > self._first:
            dispatch = draft.event_ids[self._first]
            memo.cause = Envelope(self._correlation or dispatch, dispatch, self._attempt,
                                  self._activation)  # fmt: skip
