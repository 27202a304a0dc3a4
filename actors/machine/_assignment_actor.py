"""The `MachineAssignmentActor`: one per assignment (one Project's environment on one
Execution Node), owning its row and its lease machine (`_assignment_core`).

Its messages: `Place` (create the row: the first Session placed there), `LeaseRequest` (the
Node asks for a grant: answered with the frames to send), `Status` (a heartbeat and its
reports, then a look at what to launch), `Restarted` (a Control start or the actor's own
restart: rebuild behind the barrier) and `Fired` (a durable timer: look again). Every step
writes its row's table events, the epoch or renewal sequence it is about to send and its
timers in ONE write before any frame goes out. Its durable timers: `lease` at the lease
horizon, `barrier` at the restart barrier's floor, `reconcile` every few seconds while a
launch is unanswered (it sends the launch again), `expiry` once the horizon and the Node's
bounded stop have passed (`_assignment_core.expired`: the worker attempts Control still
holds live there are reconciled by expiry, `MachineRelay.expire`, and then the lease epoch,
`expiry_reconciled`). The actor is never passivated: its machine's memory (grants in
flight, heartbeats) is not durable, and losing it would be a discontinuity; assignments are
few (one per Project and machine).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any, Final

import attrs
import trio

from actors import NODE, Change, EffectScope, Envelope, Wake, Write, WritePath
from maia.core import MaiaError
from supervision.leases import (
    ControlPhase,
    LaunchAssignment,
    MachineAssignment,
    MachineLeaseGrant,
    NodeStatus,
    Reading,
    RegistrationRecord,
    RequestArrived,
    RequestRefused,
    SendGrant,
    StatusArrived,
    Tick,
    to_wire,
)

from ._assignment_board import AssignmentLease
from ._assignment_core import (
    EXPIRY,
    EXPIRY_GRACE_MS,
    GRANT_TTL_MS,
    RECONCILE,
    Plan,
    decide,
    expired,
    expiry_reconciled,
    fresh,
    plan_row,
    restore,
    wakes,
    wants_launch,
)
from ._assignment_messages import (
    AssignmentContext,
    AssignmentMessage,
    LeaseRequest,
    Place,
    Status,
    environment_digest,
)
from ._assignment_table import ASSIGNMENT_TABLE
from ._assignments import ASSIGNMENT_ROWS, AssignmentRow, creation_write, get_assignment
from ._relay_frames import GrantFrame, LaunchAssignmentFrame, RefusedFrame
from ._sql import get_machine

log = logging.getLogger("maia.machines")
RESEND_LAUNCH_MS: Final = 5_000
SEND_BOUND_S: Final = 10.0
KEPT_GRANTS: Final = 16  # grants remembered as sent, for retried requests
_UNKNOWN: Final = object()  # a timer this actor has not armed or cancelled yet


class MachineAssignmentActor:
    """A `Behaviour` for the assignment registry (see the module)."""

    def __init__(self, ctx: AssignmentContext, path: WritePath, assignment_id: str) -> None:
        self.ctx = ctx
        self.path = path
        self.assignment_id = assignment_id
        self.lease: AssignmentLease | None = None
        self._armed: dict[str, object] = {}  # timer name -> due (monotonic ms) or None
        self._launch_sent: dict[int, int] = {}  # epoch -> last send (monotonic ms)
        self._grants: dict[str, MachineLeaseGrant] = {}  # request ID -> the grant as sent
        # The Node's newest status reports the row's epoch in a phase other than `stopped`:
        # work of it may still run there, so a reconciled machine launches no next epoch.
        self._epoch_unstopped = False

    def attach(self, scope: EffectScope) -> None:
        """It starts no effects: every send is bounded and done in its own step."""

    async def handle_batch(self, envelopes: list[Envelope[AssignmentMessage]]) -> None:
        for envelope in envelopes:
            try:
                envelope.resolve(await self.handle(envelope.message))
            except MaiaError as refusal:
                envelope.refuse(refusal)

    async def handle(self, message: AssignmentMessage) -> Any:
        if isinstance(message, Place):
            return await self._place(message)
        lease = await self._loaded()
        if isinstance(message, LeaseRequest):
            plan = decide(lease.row, lease.state, RequestArrived(message.request, GRANT_TTL_MS),
                          self.ctx.board.now())  # fmt: skip
            await self._commit(plan)
            return self._answers(plan)
        if isinstance(message, Status):
            status = message.status
            plan = decide(lease.row, lease.state, StatusArrived(status),
                          self.ctx.board.now())  # fmt: skip
            node = plan.state.nodes[lease.row.machine_id]
            if node.last_report_sequence == status.report_sequence:  # taken, not stale
                self._epoch_unstopped = _unstopped(status, lease.row)
            await self._commit(plan)
        await self._tick()  # Status, Restarted, Fired: launch what the machine asks for
        return None

    # -- loading -----------------------------------------------------------------------

    async def _place(self, message: Place) -> AssignmentRow:
        if self.lease is None:
            row = await self.ctx.store.read(lambda c: get_assignment(c, self.assignment_id))
            if row is None:
                committed = await self.path.commit(creation_write(message.row))
                row = committed.records[0]
                assert isinstance(row, AssignmentRow)
                state = fresh(self.ctx.control_node_id, row, message.registration)
                self.lease = self.ctx.board.publish(AssignmentLease(row, state))
                await self._commit(plan_row(row, state))  # its timers: none yet
                return row
        return (await self._loaded()).row

    async def _loaded(self) -> AssignmentLease:
        """The lease as published (with the newest registration), loading it first: a
        (re)start of this actor rebuilds the machine behind a barrier."""
        if self.lease is None:
            found = await self.ctx.store.read(self._read)
            if found is None:
                raise MaiaError("resource_not_found", f"assignment {self.assignment_id} does "
                                "not exist", {"resource": "assignment",
                                              "id": self.assignment_id})  # fmt: skip
            row, registration = found
            state = restore(self.ctx.control_node_id, row, registration, self.ctx.board.now())
            self.lease = self.ctx.board.publish(AssignmentLease(row, state))
            await self._commit(plan_row(row, state))  # the barrier, if not yet stored; timers
        self.lease = self.ctx.board.leases.get(self.assignment_id, self.lease)
        return self.lease

    def _read(self, conn: Any) -> tuple[AssignmentRow, RegistrationRecord] | None:
        row = get_assignment(conn, self.assignment_id)
        if row is None:
            return None
        machine = get_machine(conn, machine_id=row.machine_id)
        return None if machine is None else (row, machine.registration)

    # -- steps -------------------------------------------------------------------------

    async def _commit(self, plan: Plan, *, launching: bool = False) -> None:
        """Write the plan's row, events and timers (one write), then publish it."""
        assert self.lease is not None
        now = self.ctx.board.now()
        wanted: dict[str, int | None] = {
            name: None if ms is None else now.mono + ms
            for name, ms in wakes(plan.row, plan.state, now).items()
        }
        if wanted[EXPIRY] is None and self._expiry_deferred(plan, now):
            armed = self._armed.get(EXPIRY)  # look again while the link is up
            later = isinstance(armed, int) and armed > now.mono
            wanted[EXPIRY] = armed if isinstance(armed, int) and later else (
                now.mono + EXPIRY_GRACE_MS)  # fmt: skip
        if launching:
            wanted[RECONCILE] = now.mono + RESEND_LAUNCH_MS
        elif not wants_launch(plan.state, self.assignment_id):
            wanted[RECONCILE] = None
        timers = [_wake(name, due, now.mono) for name, due in wanted.items()
                  if self._armed.get(name, _UNKNOWN) != due]  # fmt: skip
        changes: tuple[Change[Any], ...] = ()
        if plan.events:
            changes = (Change(ASSIGNMENT_ROWS, ASSIGNMENT_TABLE, self.lease.row, plan.row,
                              plan.events, NODE),)  # fmt: skip
        row = self.lease.row
        if changes or timers:
            committed = await self.path.commit(Write(changes=changes, wakes=tuple(timers)))
            row = committed.records[0] if changes else row
            for name, due in wanted.items():
                self._armed[name] = due
        self.lease = self.ctx.board.publish(AssignmentLease(row, plan.state))

    def _answers(self, plan: Plan) -> list[object]:
        answers: list[object] = []
        for action in plan.actions:
            if isinstance(action, SendGrant):
                grant = self._as_sent(action)
                if not action.duplicate:
                    self.ctx.trace.emit("grant_issued", grant=to_wire(grant),
                                        control_mono_ms=self.ctx.board.now().mono)  # fmt: skip
                answers.append(GrantFrame("grant", grant))
            elif isinstance(action, RequestRefused):
                answers.append(RefusedFrame("refused", action.request_id, action.reason))
        return answers

    def _as_sent(self, action: SendGrant) -> MachineLeaseGrant:
        """The grant with `acknowledgedThrough` no further than what Control's Session actors
        took of the spool (the pure machine acknowledges what the last status reported
        written; records of it may still be in flight or queued at a Session actor). A
        retried request gets the grant exactly as first sent."""
        request_id = action.grant.request_id
        sent = self._grants.get(request_id)
        if sent is None:
            source = f"{action.node_id}.{self.assignment_id}"
            through = min(action.grant.acknowledged_through, self.ctx.taken_through(source))
            sent = attrs.evolve(action.grant, acknowledged_through=through)
            self._grants[request_id] = sent
            while len(self._grants) > KEPT_GRANTS:
                del self._grants[next(iter(self._grants))]
        return sent

    async def _tick(self) -> None:
        """Step the machine with `Tick` and send the launches it asks for (written first).
        A reconciled machine whose Node still reports that epoch in another phase than
        `stopped` (after expiry reconciliation: `stopping`, its stop under way or failed,
        item 8) launches nothing until it reports `stopped`: the next epoch never runs
        beside the old one's work (item 10)."""
        lease = await self._loaded()
        phase = lease.state.assignments[self.assignment_id].phase
        if phase is ControlPhase.RECONCILED and self._epoch_unstopped:
            return
        plan = decide(lease.row, lease.state, Tick(), self.ctx.board.now())
        launches = [a for a in plan.actions if isinstance(a, LaunchAssignment)]
        now_ms = self.ctx.board.now().mono
        due = [a for a in launches
               if now_ms - self._launch_sent.get(a.lease_epoch, -RESEND_LAUNCH_MS)
               >= RESEND_LAUNCH_MS]  # fmt: skip
        await self._commit(plan, launching=bool(due))
        await self._send_launches(due, now_ms)
        await self._expire()

    async def _expire(self) -> None:
        """Expiry reconciliation, when `expired` holds with the machine away: the relay ends
        what Control holds live there, then (the machine still away) the epoch ends too, as
        a `stopped` report would end it (`expiry_reconciled`, the row's `expired`, written
        before any launch of the next epoch). A machine back meanwhile keeps its epoch: its
        hello and reports reconcile it."""
        lease = await self._loaded()
        now = self.ctx.board.now()
        if (self.ctx.expire is None or not self._away(lease.row, now)
                or not expired(lease.row, lease.state, now)):  # fmt: skip
            return
        if await self.ctx.expire(lease.row.machine_id, lease.row.assignment_id):
            lease = await self._loaded()
            log.warning("assignment %s: its lease on %s expired with no report of it: epoch"
                        " %d is reconciled by expiry", lease.row.assignment_id,
                        lease.row.machine_id, lease.row.lease_epoch)  # fmt: skip
            await self._commit(expiry_reconciled(lease.row, lease.state))

    def _away(self, row: AssignmentRow, now: Reading) -> bool:
        """Whether the machine has had no link for `EXPIRY_GRACE_MS` at least: a link that
        just dropped (a partition healing, this Control frozen a while) reconnects within
        its backoff and its reports and exits are heard again."""
        away = self.ctx.board.links.away_ms(row.machine_id, now.mono)
        return away is not None and away >= EXPIRY_GRACE_MS

    def _expiry_deferred(self, plan: Plan, now: Reading) -> bool:
        """Expired, but the machine is not away (its link is up, or dropped just now) and
        Control still holds attempts there: its reports are heard (a `stopped` one
        reconciles; an `exited` frame ends the attempt), so expiry waits, looking again
        every `EXPIRY_GRACE_MS` (a machine away by then is expired at that look)."""
        row = plan.row
        return (self.ctx.expire is not None and not self._away(row, now)
                and expired(row, plan.state, now)
                and self.ctx.holds(row.machine_id, row.assignment_id))  # fmt: skip

    async def _send_launches(self, launches: Sequence[LaunchAssignment], now_ms: int) -> None:
        """Send each launch; a sent one counts as sent at `now_ms`, the reading its tick took
        before the commit armed `reconcile`, so the timer never falls due before the resend
        does (a slow commit used to leave it firing early, finding nothing due, unarmed)."""
        assert self.lease is not None
        row = self.lease.row
        for launch in launches:
            registration = self.lease.state.nodes[row.machine_id].registration
            assignment = MachineAssignment(row.assignment_id, self.ctx.control_node_id,
                                           registration.incarnation, row.project_id,
                                           row.project_id, row.environment_revision,
                                           environment_digest(row))  # fmt: skip
            frame = LaunchAssignmentFrame("launch_assignment", assignment, launch.lease_epoch)
            sent = False
            with trio.move_on_after(SEND_BOUND_S):
                sent = await self.ctx.send(row.machine_id, frame)
            if sent:
                if launch.lease_epoch not in self._launch_sent:
                    self.ctx.trace.emit("launch", node_id=row.machine_id,
                                        assignment_id=row.assignment_id,
                                        lease_epoch=launch.lease_epoch)  # fmt: skip
                self._launch_sent[launch.lease_epoch] = now_ms


def _unstopped(status: NodeStatus, row: AssignmentRow) -> bool:
    """Whether `status` reports the row's epoch in a phase other than `stopped`."""
    return any(report.assignment_id == row.assignment_id and report.lease_epoch == row.lease_epoch
               and report.phase != "stopped" for report in status.reports)  # fmt: skip


def _wake(name: str, due_mono: int | None, now_mono: int) -> Wake:
    if due_mono is None:
        return Wake(name, cancel=True)
    return Wake(name, after_ms=max(0, due_mono - now_mono))
