"""The assignment actor's pure core: the `supervision.leases` Control machine of one
assignment, carried unchanged, and what its steps mean for the assignment's row.

`restore` rebuilds the machine after a Control start (or a restart of the actor: its memory
of grants in flight and heartbeats is gone, which is a discontinuity too): the durable epoch
and sequence, the stored barrier, then `control_restarted` (barrier and a horizon a maximum
TTL out, spec MN0 item 4). `decide(row, state, event, now)` steps the machine and names the
row's table events (`launch` when a new epoch goes out, `grant` when a renewal sequence is
issued, `stopped` on cleanup reconciliation, `confirmed` when the barrier clears, `restart`
when it is raised), so the actor writes the epoch or sequence before the frame goes out
and a restart never issues one twice; `expiry_reconciled` ends the epoch by expiry (the
row's `expired`). `wakes` names the durable timers the state asks for: the lease horizon and
the barrier's floor (a replacement still comes only from a `stopped` report or expiry
reconciliation, item 10: the timers only let the machine look again). No I/O, no clock.
"""

from __future__ import annotations

import logging
from typing import Final

import attrs

from supervision.leases import (
    MAX_ROUND_TRIP_MS,
    STOP_BOUND_MS,
    ControlAction,
    ControlEvent,
    ControlPhase,
    ControlState,
    LaunchAssignment,
    Reading,
    RegistrationRecord,
    RollbackProven,
    SendGrant,
    control_restarted,
    control_step,
    new_control,
    set_registration,
)
from supervision.leases._evolve import evolve

from ._assignment_table import ASSIGNMENT_TABLE, AssignmentEvent, AssignmentState
from ._assignments import AssignmentRow

log = logging.getLogger("maia.machines")
GRANT_TTL_MS: Final = 30_000  # the spec's example; within [MIN_TTL_MS, MAX_TTL_MS]
LEASE: Final = "lease"  # wake at the lease horizon
BARRIER: Final = "barrier"  # wake at the restart barrier's floor
RECONCILE: Final = "reconcile"  # wake to send a launch again (armed by the actor)
EXPIRY: Final = "expiry"  # wake when the horizon and the Node's bounded stop have passed
# Expiry reconciliation (spec MN0 item 10, MN2's): the Node's local deadline falls before
# Control's horizon (items 2-4), and its bounded stop ends within STOP_BOUND_MS of that
# deadline (item 8); a round trip more for its last report. Past this, with no report of a
# stop still under way, no worker of the assignment's epochs runs on the Node.
EXPIRY_GRACE_MS: Final = STOP_BOUND_MS + MAX_ROUND_TRIP_MS


@attrs.frozen
class Plan:
    """One step: the machine after it, the row's new fields and table events, the actions."""

    state: ControlState
    row: AssignmentRow
    events: tuple[AssignmentEvent, ...]
    actions: tuple[ControlAction, ...]


def fresh(control_node_id: str, row: AssignmentRow,
          registration: RegistrationRecord) -> ControlState:  # fmt: skip
    """A new assignment (first placement in this run): no barrier, nothing issued yet."""
    state = new_control(control_node_id, (row.assignment_id,), (row.machine_id,))
    return set_registration(state, registration)


def restore(control_node_id: str, row: AssignmentRow, registration: RegistrationRecord,
            now: Reading) -> ControlState:  # fmt: skip
    """The machine rebuilt from the row, behind a restart barrier (see the module)."""
    state = fresh(control_node_id, row, registration)
    lease = state.assignments[row.assignment_id]
    if row.lease_epoch > 0:
        phase = (ControlPhase.RECONCILED if row.state is AssignmentState.RECONCILED
                 else ControlPhase.ACTIVE)  # fmt: skip
        lease = evolve(lease, phase=phase, node_id=row.machine_id, lease_epoch=row.lease_epoch,
                       next_sequence=row.next_sequence, barrier=row.barrier)  # fmt: skip
    state = evolve(state, assignments={row.assignment_id: lease})
    state, _ = control_restarted(state, now)
    return state


def restart_barrier(row: AssignmentRow) -> tuple[int, int]:
    """The barrier a Control start raises over `row` (what `restore` computes)."""
    pair = (row.lease_epoch, row.next_sequence - 1)
    return max(row.barrier, pair) if row.barrier is not None else pair


def decide(row: AssignmentRow, state: ControlState, event: ControlEvent, now: Reading) -> Plan:
    """Step the machine with `event` and say what the row must record first."""
    state, actions = control_step(state, event, now)
    for action in actions:
        if isinstance(action, RollbackProven):
            log.error("machine %s: rollback proven (%s)", action.node_id, action.reason)
    return plan_row(row, state, actions)


def plan_row(row: AssignmentRow, state: ControlState,
             actions: tuple[ControlAction, ...] = (), *,
             reconciled_by: AssignmentEvent = AssignmentEvent.STOPPED) -> Plan:  # fmt: skip
    """The row's events and fields for the machine `state` after `actions`; a machine now
    reconciled moves the row by `reconciled_by` (`stopped`, or `expired`)."""
    lease = state.assignments[row.assignment_id]
    events: list[AssignmentEvent] = []
    at = row.state
    after = row

    def apply(event: AssignmentEvent) -> None:
        nonlocal at
        found = ASSIGNMENT_TABLE.get(at, event)
        if found is not None:
            events.append(event)
            at = found.target

    for action in actions:
        if isinstance(action, LaunchAssignment) and action.lease_epoch > after.lease_epoch:
            apply(AssignmentEvent.LAUNCH)
            after = attrs.evolve(after, lease_epoch=action.lease_epoch, next_sequence=1)
        elif isinstance(action, SendGrant) and not action.duplicate:
            apply(AssignmentEvent.GRANT)
            after = attrs.evolve(after, next_sequence=action.grant.renewal_sequence + 1)
    if lease.phase is ControlPhase.RECONCILED and at in (AssignmentState.LAUNCHING,
                                                         AssignmentState.ACTIVE):  # fmt: skip
        apply(reconciled_by)
    if after.barrier is not None and lease.barrier is None:
        apply(AssignmentEvent.CONFIRMED)
        if events and events[-1] is AssignmentEvent.CONFIRMED:
            after = attrs.evolve(after, barrier=None)
    elif lease.barrier is not None and after.barrier != lease.barrier:
        apply(AssignmentEvent.RESTART)
        after = attrs.evolve(after, barrier=lease.barrier)
    return Plan(state, attrs.evolve(after, state=at), tuple(events), actions)


def wakes(row: AssignmentRow, state: ControlState, now: Reading) -> dict[str, int | None]:
    """The lease and barrier timers the machine asks for: name -> ms from now (None: none)."""
    lease = state.assignments[row.assignment_id]
    horizon = lease.horizon_ms
    live = lease.phase in (ControlPhase.ACTIVE, ControlPhase.LAUNCHING)
    floor = lease.floor_ms if lease.barrier is not None else None
    expiry = None if horizon is None else horizon + EXPIRY_GRACE_MS
    return {
        LEASE: horizon - now.mono if live and horizon is not None and horizon > now.mono else None,
        BARRIER: floor - now.mono if floor is not None and floor > now.mono else None,
        EXPIRY: expiry - now.mono if live and expiry is not None and expiry > now.mono else None,
    }


def expired(row: AssignmentRow, state: ControlState, now: Reading) -> bool:
    """Whether the assignment is reconciled by expiry: live, its horizon `EXPIRY_GRACE_MS`
    behind, and its Node's last report not `stopping` (a stop it said is under way, or
    failed, leaves the assignment uncertain, item 8: only its `stopped` report ends it).
    What still runs there at Control (a worker attempt not reported gone) is then over."""
    lease = state.assignments[row.assignment_id]
    live = lease.phase in (ControlPhase.ACTIVE, ControlPhase.LAUNCHING)
    stopping = lease.last_report is not None and lease.last_report.phase == "stopping"
    horizon = lease.horizon_ms
    return live and not stopping and horizon is not None and (now.mono >= horizon + EXPIRY_GRACE_MS)


def expiry_reconciled(row: AssignmentRow, state: ControlState) -> Plan:
    """Expiry reconciliation of the assignment's epoch (spec MN0 item 10: the explicit one
    MN2 defines, with the overlapping-execution test), once `expired` holds with the
    machine away: the machine as a `stopped` report leaves it (reconciled, the epoch's
    grants dropped, its horizon and last report kept), the row `expired`. Its next `Tick`
    launches the next epoch once the machine is reachable again; a Node whose stop of the
    old epoch has not ended ignores that launch until it has (no `launch` while stopping),
    so the next epoch never runs beside the old one."""
    lease = state.assignments[row.assignment_id]
    if lease.phase not in (ControlPhase.ACTIVE, ControlPhase.LAUNCHING):
        return plan_row(row, state)
    lease = evolve(lease, phase=ControlPhase.RECONCILED, grants=(),
                   previous_node_id=lease.node_id)  # fmt: skip
    state = evolve(state, assignments={**state.assignments, row.assignment_id: lease})
    return plan_row(row, state, reconciled_by=AssignmentEvent.EXPIRED)


def wants_launch(state: ControlState, assignment_id: str) -> bool:
    """Whether the machine is launching (a launch not yet answered is sent again)."""
    return state.assignments[assignment_id].phase is ControlPhase.LAUNCHING
