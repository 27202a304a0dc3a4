"""The machine assignment's lifecycle, as a transition table (one Project's environment on
one Execution Node; its row is `machine_assignments`).

`place` creates it `unplaced` (the first Session placed there). The pure lease machine of
`supervision.leases` (the actor's core) decides when it moves: `launch` (a new lease epoch,
written before the launch goes out) to `launching`; `grant` (a renewal sequence, written
before the grant goes out) to `active`; `stopped` (the Node reported the epoch stopped:
cleanup reconciled) or `expired` (expiry reconciliation: the machine away past the lease
horizon and the Node's bounded stop, `_assignment_core.expired`) to `reconciled`, from where
only the next `launch` leaves. `restart` is the recovery column: a Control start keeps every
assignment in its state and raises its barrier (the newest pair issued before the start,
stored in the row); `confirmed` clears it once a running report confirms a grant issued
after it. All by the Node; no receipt (no
client asks for any of them), and no journal event: a renewal every few seconds per
assignment is not worth a line in the journal (`machine.show` shows where it stands).
"""

from __future__ import annotations

import enum

from actors._table import NODE, TransitionTable, creation, row


class AssignmentState(enum.Enum):
    UNPLACED = "unplaced"
    LAUNCHING = "launching"
    ACTIVE = "active"
    RECONCILED = "reconciled"


class AssignmentEvent(enum.Enum):
    PLACE = "place"
    LAUNCH = "launch"
    GRANT = "grant"
    STOPPED = "stopped"
    EXPIRED = "expired"  # expiry reconciliation: the machine away past the horizon and stop
    CONFIRMED = "confirmed"  # a running report confirmed a grant issued after the barrier
    RESTART = "restart"  # Control started: the recovery column


def _assignment_table() -> TransitionTable[AssignmentState, AssignmentEvent]:
    s, e = AssignmentState, AssignmentEvent
    return TransitionTable(
        "assignment",
        states=AssignmentState,
        events=AssignmentEvent,
        initial=s.UNPLACED,
        terminal=(),
        create=creation(e.PLACE, s.UNPLACED, NODE, recovery=s.UNPLACED),
        recover_with=e.RESTART,
        rows=[
            row(s.UNPLACED, e.LAUNCH, s.LAUNCHING, NODE, recovery=s.LAUNCHING),
            row(s.RECONCILED, e.LAUNCH, s.LAUNCHING, NODE),
            row(s.LAUNCHING, e.GRANT, s.ACTIVE, NODE, recovery=s.ACTIVE),
            row(s.ACTIVE, e.GRANT, s.ACTIVE, NODE),
            row(s.LAUNCHING, e.STOPPED, s.RECONCILED, NODE, recovery=s.RECONCILED),
            row(s.ACTIVE, e.STOPPED, s.RECONCILED, NODE),
            row(s.LAUNCHING, e.EXPIRED, s.RECONCILED, NODE),
            row(s.ACTIVE, e.EXPIRED, s.RECONCILED, NODE),
            row(s.ACTIVE, e.CONFIRMED, s.ACTIVE, NODE),
            row(s.UNPLACED, e.RESTART, s.UNPLACED, NODE),
            row(s.LAUNCHING, e.RESTART, s.LAUNCHING, NODE),
            row(s.ACTIVE, e.RESTART, s.ACTIVE, NODE),
            row(s.RECONCILED, e.RESTART, s.RECONCILED, NODE),
        ],
    )  # fmt: skip


ASSIGNMENT_TABLE = _assignment_table()
