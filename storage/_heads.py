"""The journal's heads as the writer's own appends left them, so an append needs no read.

`append_event` gives an event the position after the newest and its owner the sequence after
the owner's newest; read before every insert, that was a statement of its own (~3 µs of
SQLite per event on the writer thread, five events a turn at 50 Sessions: issue 21 goal 3).
The writer thread keeps what its appends leave (`JournalHeads`: the newest position and, per
owner, its number and next sequence) and an append from them is one INSERT whose position is
left NULL: SQLite gives the row the rowid after the table's largest, which is the position
`append_event` would compute, and says which (`lastrowid`).

The rule it stands on: only `append_event` and the prune write `events` and `event_owners`
(tests/storage/test_journal_writers.py holds the product to it): a write fn's own SQL that
inserted a journal row after rolling back its own savepoint would cancel out in the rowid
check below. Given that, when the row got the expected position,
no event was taken out or added since the heads were noted. A rolled-back savepoint (the
batch's or a fn's own) or transaction removes a suffix of what was appended, the newest row
among it, so the next rowid is lower than expected; another writer's rows make it higher; a
sequence another writer took fails the insert on `UNIQUE (owner_no, owner_seq)`. In each case
the row (if any) is deleted again, every head is forgotten and the append reads as before.
An append that reads (an owner not kept) compares the newest position it read with the
heads' before noting its own (`settle`), or a rolled-back head of another owner would hide
behind it. Within a transaction only the writer writes; between them another writer can only
add rows, which the next append sees, as long as the heads are right at each commit: the
writer settles them on the newest position `still_stored` reads before COMMIT, and forgets
them when a request or the transaction fails. Pruning keeps positions and sequences running
(`pruned_owner_heads`), and forgets the heads anyway; a journal pruned empty gives rowid 1.
"""

from __future__ import annotations

import sqlite3
import threading
from typing import Final

_ALL_PRUNED_NUMBERED: Final = (
    "SELECT NOT EXISTS (SELECT 1 FROM pruned_owner_heads"
    " WHERE owner_id NOT IN (SELECT owner_id FROM event_owners))"
)
MAX_OWNERS: Final = 1024  # owners whose heads are kept; past it, the map starts again (~250 B each)
_active = threading.local()


class JournalHeads:
    """One write connection's journal heads (the writer thread's, across its transactions)."""

    __slots__ = ("_numbered", "conn", "newest", "owners")

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self.newest: int | None = None  # the position of the newest event this writer wrote
        self.owners: dict[str, tuple[int, int]] = {}  # owner ID -> (owner_no, next sequence)
        self._numbered: bool | None = None  # `all_pruned_numbered`, once read

    def all_pruned_numbered(self) -> bool:
        """Whether every owner with a pruned head (`pruned_owner_heads`) has a number in
        `event_owners`, so an owner that `event_owners` does not know has no event and no
        pruned head: its first sequence is 1. True of every journal pruned since owners were
        numbered (a prune records heads of owners with events, and every event's owner has a
        number); a journal pruned before that may hold heads of owners never numbered. Read
        once per writer (one pass over `pruned_owner_heads`): no writer of this schema makes
        such a head again."""
        if self._numbered is None:
            self._numbered = bool(self.conn.execute(_ALL_PRUNED_NUMBERED).fetchone()[0])
        return self._numbered

    def noted(self, owner_id: str, position: int, owner_no: int, sequence: int) -> None:
        """The event at `position` was appended for `owner_id` with `sequence`."""
        self.newest = position
        if len(self.owners) >= MAX_OWNERS and owner_id not in self.owners:
            self.owners.clear()  # bounded: an owner not kept reads its head again
        self.owners[owner_id] = (owner_no, sequence + 1)

    def settle(self, newest: int | None) -> None:
        """The journal's newest position is `newest` (None: none, or not known): the heads
        are forgotten unless it is theirs. An append that reads (an owner not kept) checks
        this way before it notes its own head over theirs, and the writer at each commit."""
        if newest is None or newest != self.newest:
            self.forget()

    def forget(self) -> None:
        self.newest = None
        self.owners.clear()


def use_heads(heads: JournalHeads | None) -> None:
    """In the batch loop: appends on `heads.conn` use and update `heads` from now on
    (None: appends read the journal's heads each time)."""
    _active.heads = heads


def current_heads() -> JournalHeads | None:
    """The heads this thread keeps, for whichever connection (`active_heads` checks it)."""
    heads: JournalHeads | None = getattr(_active, "heads", None)
    return heads


def active_heads(conn: sqlite3.Connection) -> JournalHeads | None:
    """The heads this thread keeps for `conn`, if any."""
    heads: JournalHeads | None = getattr(_active, "heads", None)
    return heads if heads is not None and heads.conn is conn else None
