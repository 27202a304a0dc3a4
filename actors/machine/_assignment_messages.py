"""The assignment actor's vocabulary: its messages, what its actors share, and the
environment digest its launches carry.

`Place` creates the row (the first Session placed there; answered with the row),
`LeaseRequest` is a Node's request (answered with the frames to send), `Status` a heartbeat
and its reports, `Restarted` a Control start or the actor's own restart; `Fired` (a durable
timer) comes from the runtime.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import attrs

from actors import Fired
from maia.core import digest_json
from supervision.leases import MachineLeaseRequest, NodeStatus, RegistrationRecord

from ._assignment_board import AssignmentBoard
from ._assignments import AssignmentRow
from ._trace_hook import MachineTrace

Send = Callable[[str, object], Awaitable[bool]]


@attrs.frozen
class Place:
    """Create the assignment (its `place` transition); answered with the row."""

    row: AssignmentRow
    registration: RegistrationRecord


@attrs.frozen
class LeaseRequest:
    request: MachineLeaseRequest


@attrs.frozen
class Status:
    status: NodeStatus


@attrs.frozen
class Restarted:
    """Told at a Control start and after the actor restarted."""


AssignmentMessage = Place | LeaseRequest | Status | Restarted | Fired


@attrs.frozen
class AssignmentContext:
    """What every assignment actor of a Control Node shares."""

    store: Any  # storage.Storage
    board: AssignmentBoard
    send: Send  # to a machine's link; False when it is down
    trace: MachineTrace
    control_node_id: str
    # What Control took of a source (its evidence ledger): a grant acknowledges no more.
    taken_through: Callable[[str], int] = lambda source: 0
    # Expiry reconciliation: (machine, assignment) -> end what Control still holds live there,
    # True when done with the machine still away (the epoch then ends too); `holds`: whether
    # it holds anything live there (worker attempts not reported gone).
    expire: Callable[[str, str], Awaitable[bool]] | None = None
    holds: Callable[[str, str], bool] = lambda machine, assignment: False


def environment_digest(assignment: AssignmentRow) -> str:
    """sha256 over RFC 8785 JSON of the assignment's environment definition (revision 1: the
    Project itself, its worker launches checked one by one)."""
    return digest_json({"projectId": assignment.project_id,
                        "environmentRevision": assignment.environment_revision})  # fmt: skip
