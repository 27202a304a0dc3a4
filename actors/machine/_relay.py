"""The Control Node's side of remote work between the links and the actors: the frames
of each link, the live `RemoteWorkerHandle`s by attempt, and placement.

`MachineRelay` is what the listener calls with each authenticated frame and what the
placing supervisor asks for a worker. Lease requests and statuses go to the assignment's
`MachineAssignmentActor` (its lease machine, its row and its durable timers); the relay
reads the snapshots the actors publish (`AssignmentBoard`, as `leases`) for placement.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Sequence
from typing import Any, Final

import trio

from actors import ActorError
from maia.core import MaiaError, digest_json, new_id, to_json
from storage import next_worker_epoch
from supervision.leases import MAX_TTL_MS, STOP_BOUND_MS, MachineLeaseRequest, NodeStatus, to_wire
from supervision.workers import ExitInfo, WorkerSpec

from ._assignment_board import AssignmentBoard
from ._assignment_messages import LeaseRequest, Status
from ._evidence_ledger import EvidenceLedger
from ._links import LinkBoard, LinkState
from ._recovered import EXPIRED, REASK_S, STOPPED, RecoveredAttempts
from ._relay_frames import (
    AbandonFrame,
    AckFrame,
    LaunchWorkerFrame,
    RefusedFrame,
    StopWorkerFrame,
    TurnEventFrame,
    WireSpec,
    WorkerFrame,
)
from ._remote_worker import RemoteWorkerHandle
from ._trace_hook import MachineTrace

log = logging.getLogger("maia.machines")
PLACEMENT_WAIT_S: Final = 20.0  # a launch waits this long for item 9 to hold, then is held
# A Session with an attempt not yet seen gone (held in memory, or left live by an earlier
# Control run) waits up to the reconcile bound: that worker may run until the Execution
# Node's lease deadline, at most the longest lease away, plus its bounded stop (MN0 items 8,
# 10); only the Node's report then frees the Session, whichever way Control knows the attempt.
RECONCILE_WAIT_S: Final = (MAX_TTL_MS + STOP_BOUND_MS) / 1000
ASK_S: Final = 4.5
# How many times one link re-asks an unconfirmed stop or fence (every `REASK_S`, 15 s) after
# the hello's own ask. By then the Execution Node has had the longest lease and its bounded
# stop (`RECONCILE_WAIT_S`, 70 s) since the first ask: a stop still unanswered on a link that
# stayed up is taken as unanswerable there (spec MN0 item 8: the attempt stays uncertain).
# Control stops asking on that link and logs it; the attempt stays live, so its Session
# stays held (`attempt_live`: no replacement beside a worker that may still run, item 10),
# until the Node reports it gone or a later hello (a new link) asks again, as often.
MAX_REASKS: Final = -(-int(RECONCILE_WAIT_S) // int(REASK_S))


def spec_digest(spec: WireSpec) -> str:
    """sha256 over RFC 8785 JSON of a worker launch: what the Execution Node compares."""
    return digest_json(to_json(spec))


def wire_spec(spec: WorkerSpec) -> WireSpec:
    activation = {k: str(v) for k, v in spec.activation.items() if k != "stateDir"}
    return WireSpec(tuple(spec.argv), spec.cwd, dict(spec.env), dict(spec.options), activation)


EXPIRED_KEPT: Final = 256  # attempts ended by expiry that the relay remembers


class MachineRelay:
    """See the module."""

    def __init__(self, store: Any, clock: Any, links: LinkBoard) -> None:
        self.store = store
        self.clock = clock
        self.links = links
        self.leases = AssignmentBoard(clock, links)
        self.assignments: Any = None  # the assignment registry, set by the kind at open
        self.handles: dict[str, tuple[str, str, RemoteWorkerHandle]] = {}  # attempt -> ...
        self.session_of: dict[str, str] = {}  # attempt -> its Session (only those in handles)
        self.recovered = RecoveredAttempts(store, clock)  # live when Control last stopped
        self.ledger = EvidenceLedger()  # what each shared spool's acknowledgement may cover
        self.trace = MachineTrace.from_env(clock)  # off unless a test asks (docs/machines.md)
        self._asked_ms: dict[str, int] = {}  # machine -> when its stops were last asked
        self._reasks: dict[str, int] = {}  # attempt -> re-asks on its machine's current link
        self.expired: dict[str, str] = {}  # attempt -> machine: ended by expiry (`expire`)

    # -- placement ---------------------------------------------------------------------

    def blockers(self, assignment_id: str, session_id: str | None = None) -> tuple[str, ...]:
        lease = self.leases.leases.get(assignment_id)
        found = list(self.leases.blockers(assignment_id))
        if lease is None or self.links.get(lease.row.machine_id) is None:
            found.insert(0, "not_connected")
        if session_id is not None and session_id in self._live_sessions():
            found.append("attempt_live")  # its earlier attempt not yet seen gone (MN0 item 10)
        return tuple(found)

    def _live_sessions(self) -> set[str]:
        """The Sessions with an attempt this relay still holds (forgetting the others), or
        one an earlier Control run left live (`_recovered`)."""
        for attempt_id in [a for a in self.session_of if a not in self.handles]:
            del self.session_of[attempt_id]
        return set(self.session_of.values()) | self.recovered.sessions()

    async def start_remote(self, assignment_id: str, spec: WorkerSpec) -> RemoteWorkerHandle:
        """Launch a worker attempt under the assignment. Raises `held` naming every item-9
        condition that blocks placement, `unavailable` when the Node does not start it."""
        session = spec.activation.get("sessionId")
        session_id = session if isinstance(session, str) else None
        blockers = self.blockers(assignment_id, session_id)
        live = "attempt_live" in blockers
        with trio.move_on_after(RECONCILE_WAIT_S if live else PLACEMENT_WAIT_S):
            while blockers:  # a fresh lease is a round trip away; a stop, a bounded stop
                await trio.sleep(0.2)
                blockers = self.blockers(assignment_id, session_id)
        if blockers:
            raise MaiaError("held", f"admission is held: the machine assignment is blocked "
                            f"({', '.join(blockers)})", {"detail": ",".join(blockers)})  # fmt: skip
        lease = self.leases.leases[assignment_id]
        machine_id = lease.row.machine_id
        link_epoch = lease.state.assignments[assignment_id].lease_epoch
        self.trace.emit("placement", node_id=machine_id, assignment_id=assignment_id,
                        lease_epoch=link_epoch, control_mono_ms=self.clock.monotonic_ms(),
                        admitted=lease.state.nodes[machine_id].registration.admits)  # fmt: skip
        epoch = int(await self.store.write(next_worker_epoch))
        attempt_id = new_id("attempt")

        handle = self.attach_handle(machine_id, assignment_id, attempt_id, epoch)
        if session_id is not None:
            self.session_of[attempt_id] = session_id
        remote = wire_spec(spec)
        frame = LaunchWorkerFrame("launch_worker", assignment_id, link_epoch, attempt_id, epoch,
                                  remote, spec_digest(remote))  # fmt: skip
        if not await self.send(machine_id, frame):
            self.handles.pop(attempt_id, None)
            raise MaiaError("unavailable", "the Execution Node is not connected",
                            {"target": "machine"})  # fmt: skip
        try:
            await handle.wait_spawned()
        except MaiaError:
            self.handles.pop(attempt_id, None)
            raise
        return handle

    def attach_handle(self, machine_id: str, assignment_id: str, attempt_id: str,
                      epoch: int) -> RemoteWorkerHandle:  # fmt: skip
        """The handle of a remote attempt, fed by `on_frame`; its records settle in the
        assignment's shared spool ledger (see `_evidence_ledger`)."""
        source = f"{machine_id}.{assignment_id}"

        async def send(frame: object) -> bool:
            if isinstance(frame, AbandonFrame) and not carries_abandon():
                return False  # an older Node would refuse it: asked again on a newer link
            return await self.send(machine_id, frame)

        async def acknowledge(sequence: int) -> None:
            # Called once the Session actor took record `sequence` (written to its journal).
            self.trace.emit("record_stored", source=source, sequence=sequence)
            self.ledger.of(source).taken(sequence)
            await self._flush(machine_id, source)

        def release(sequences: Iterable[int]) -> None:  # acknowledged with the next flush
            for sequence in sequences:
                self.ledger.of(source).taken(sequence)

        def carries_abandon() -> bool:  # the link is up and its Node acts on `abandon`
            link = self.links.get(machine_id)
            return link is not None and link.carries("abandon")

        handle = RemoteWorkerHandle(attempt_id, epoch, send, acknowledge, release,
                                    carries_abandon)  # fmt: skip
        self.handles[attempt_id] = (machine_id, assignment_id, handle)
        return handle

    # -- the link ----------------------------------------------------------------------

    async def send(self, machine_id: str, frame: object) -> bool:
        link = self.links.get(machine_id)
        if link is None or link.send is None:
            return False
        try:
            await link.send(frame)
        except Exception:  # the link went away under us: its task ends it
            return False
        return True

    async def on_hello(self, machine_id: str, live: Sequence[str]) -> None:
        """Cleanup reconciliation: attempts the Node says it no longer runs are over; those
        an earlier Control run left live are closed, or asked to stop (`_recovered`)."""
        for attempt_id, (owner, _, handle) in list(self.handles.items()):
            if owner == machine_id and attempt_id not in live:
                await handle.ended(ExitInfo(None, None, "runtime_lost", "exited", (), ""))
                self.handles.pop(attempt_id, None)
            elif owner == machine_id:
                await handle.send_abandon()  # a fence the link may have lost: once more
        for attempt_id in [a for a in live if self.expired.get(a) == machine_id]:
            # Ended here by expiry, yet the Node still runs it: its stop failed (or its clock
            # did not hold the lease rules). Said loudly, and asked to stop it.
            log.error("attempt %s: %s still runs it after its lease expired: asking it to stop",
                      attempt_id, machine_id)  # fmt: skip
            await self.send(machine_id, StopWorkerFrame("stop_worker", attempt_id, "lease_expired"))
        await self.recovered.on_hello(machine_id, live, self.send)
        self._asked_ms[machine_id] = self.clock.monotonic_ms()  # asked now: `ask_again`
        for attempt_id in self._asking(machine_id):  # a new link asks again, as often
            self._reasks.pop(attempt_id, None)

    async def ask_again(self, machine_id: str) -> None:
        """On each status of the machine (a heartbeat, every 5 s while its link is up):
        once `REASK_S` passed since the hello or the last ask, ask again for what the
        Execution Node has not confirmed yet, each recovered attempt's stop and each
        given-up turn's fence (`abandon`). A frame lost on a link that stays up is asked
        again here, not only at the next hello (which may never come); at most
        `MAX_REASKS` times per attempt and link, then it is given up there (see there)."""
        now = self.clock.monotonic_ms()
        if now - self._asked_ms.get(machine_id, now) < REASK_S * 1000:
            return
        self._asked_ms[machine_id] = now
        asking = self._asking(machine_id)
        for attempt_id in [a for a in self._reasks if a not in asking]:
            del self._reasks[attempt_id]  # confirmed gone since: forgotten
        for attempt in self.recovered.pending(machine_id):
            if self._reask(machine_id, attempt.attempt_id):
                await self.recovered.ask_one(attempt, self.send)
        for attempt_id, (owner, _, handle) in list(self.handles.items()):
            fenced = owner == machine_id and handle.abandoned is not None
            if fenced and self._reask(machine_id, attempt_id):
                await handle.send_abandon()

    def _asking(self, machine_id: str) -> set[str]:
        """The machine's attempts with a stop or fence not yet confirmed."""
        found = {a.attempt_id for a in self.recovered.pending(machine_id)}
        return found | {a for a, (owner, _, handle) in self.handles.items()
                        if owner == machine_id and handle.abandoned is not None}  # fmt: skip

    def _reask(self, machine_id: str, attempt_id: str) -> bool:
        """Whether to ask again for the attempt on this link (counts it); at the bound it is
        logged once and given up on this link: its outcome is uncertain, its Session held."""
        count = self._reasks.get(attempt_id, 0)
        self._reasks[attempt_id] = count + 1
        if count == MAX_REASKS:
            log.error("attempt %s: %s confirmed no stop after %d asks on this link: its outcome"
                      " is uncertain; its Session stays held until the Execution Node reports"
                      " it gone (the next connection asks again)", attempt_id, machine_id,
                      MAX_REASKS + 1)  # fmt: skip
        return count < MAX_REASKS

    def holds(self, machine_id: str, assignment_id: str) -> bool:
        """Whether an attempt of the assignment is live here (not reported gone yet)."""
        held = {(owner, assignment) for owner, assignment, _ in self.handles.values()}
        recovered = {a.assignment_id for a in self.recovered.pending(machine_id)}
        return (machine_id, assignment_id) in held or assignment_id in recovered

    async def expire(self, machine_id: str, assignment_id: str) -> bool:
        """Expiry reconciliation of one assignment (its actor decides when: the horizon and
        the Node's bounded stop have passed, `_assignment_core.expired`, and the machine's
        link is down: while it is up its reports and exits are heard): the worker attempts
        Control still holds live there are over. A handle's open turn ends `lost`, so it
        fails `runtime_lost` as when the Node's hello reports the attempt gone, and its
        Session may place a new worker (still only under item 9: a link and a confirmed
        grant); an attempt an earlier Control run left live is closed. A machine that never
        reconnects thus holds its Sessions no longer than its lease and the stop.

        True when it ended them all with the machine still away (its actor then ends the
        lease epoch too, `expiry_reconciled`). A link that opens meanwhile stops it: that
        machine's hello reconciles what is left (the attempts it no longer runs end, the
        others are fenced or asked to stop) and its reports are heard again, so nothing it
        still runs is ended here. Each attempt leaves Control's hold, and is noted expired,
        before the first checkpoint of its ending, so a hello arriving during that end finds
        it either still held or already expired (asked to stop if the Node still runs it),
        never in between (it was: ended after the hello had judged it held and live)."""
        for attempt_id, (owner, assignment, handle) in list(self.handles.items()):
            if owner != machine_id or assignment != assignment_id:
                continue
            if self.links.get(machine_id) is not None:
                return False  # back: its hello reconciles it
            if self.handles.get(attempt_id, (None, None, None))[2] is not handle:
                continue  # ended meanwhile (its exit, or the hello)
            del self.handles[attempt_id]
            self._remember_expired(attempt_id, machine_id)
            log.warning("attempt %s: the lease on %s expired with no report of it: its"
                        " turn is lost", attempt_id, machine_id)  # fmt: skip
            await handle.ended(ExitInfo(None, None, "runtime_lost", "exited", (),
                                        "the machine's lease expired"))  # fmt: skip
        for attempt in self.recovered.pending(machine_id):
            if attempt.assignment_id != assignment_id:
                continue
            if self.links.get(machine_id) is not None:
                return False
            if self.recovered.take(attempt.attempt_id) is None:
                continue  # closed meanwhile
            self._remember_expired(attempt.attempt_id, machine_id)
            await self.recovered.close(attempt, EXPIRED)
        return self.links.get(machine_id) is None

    def _remember_expired(self, attempt_id: str, machine_id: str) -> None:
        """Note an attempt ended by expiry (a machine that still runs it is asked to stop it
        at its hello), keeping the newest `EXPIRED_KEPT` only."""
        self.expired[attempt_id] = machine_id
        while len(self.expired) > EXPIRED_KEPT:
            del self.expired[next(iter(self.expired))]

    async def on_frame(self, machine_id: str, frame: Any) -> None:
        if isinstance(frame, TurnEventFrame) and frame.source_id.startswith(f"{machine_id}."):
            done = self.ledger.of(frame.source_id).through
            if done is not None and frame.sequence <= done:  # a copy sent again: stored
                # already, and its acknowledgement may be what was lost: send it again
                await self.send(machine_id, AckFrame("ack", frame.source_id, done))
                return
        entry = self.handles.get(frame.attempt_id)
        if entry is None and isinstance(frame, WorkerFrame):
            await self._on_recovered(machine_id, frame)
            return
        if entry is None or entry[0] != machine_id:
            if isinstance(frame, TurnEventFrame):  # nobody's record here: settled as dropped
                if self.ledger.of(frame.source_id).received(frame.sequence, kept=False):
                    self._settled(frame)
                await self._flush(machine_id, frame.source_id)
            return  # an attempt this Control Node does not run there: changes nothing
        handle = entry[2]
        if isinstance(frame, WorkerFrame):
            source = f"{machine_id}.{entry[1]}"
            if frame.phase == "spawned" and frame.sequence and handle.pid == 0:
                # The admission's record: the Session actor writes the attempt's row from it.
                self.trace.emit("record_stored", source=source, sequence=frame.sequence)
                self.ledger.of(source).received(frame.sequence, kept=False)
            await handle.on_worker(frame)
            if frame.phase in ("exited", "refused"):
                self.handles.pop(frame.attempt_id, None)
            await self._flush(machine_id, source)
        elif isinstance(frame, TurnEventFrame):
            ledger = self.ledger.of(frame.source_id)
            fresh = ledger.received(frame.sequence, kept=True)  # before its actor can take it
            if not await handle.on_turn_event(frame) and fresh:
                ledger.taken(frame.sequence)  # dropped by the handle: settled
                self._settled(frame)
            await self._flush(machine_id, frame.source_id)

    def _settled(self, frame: TurnEventFrame) -> None:
        """A record Control settles on purpose, once, with no journal write: its turn ended
        here before it came (given up, lost, expired) or no worker of this run holds it.
        The trace counts it as accounted for (`record_stored`), like the admission record,
        so "every acknowledged record stored once" still catches one lost or taken twice."""
        self.trace.emit("record_stored", source=frame.source_id, sequence=frame.sequence)

    async def _on_recovered(self, machine_id: str, frame: WorkerFrame) -> None:
        """A phase of an attempt an earlier Control run left live: its exit closes it."""
        attempt = self.recovered.get(machine_id, frame.attempt_id)
        if attempt is None:
            return  # an attempt this Control Node does not run there: changes nothing
        if frame.phase == "spawned" and frame.sequence:  # its admission's record, sent again
            self.ledger.of(attempt.source).received(frame.sequence, kept=False)
        if frame.phase in ("exited", "refused"):
            await self.recovered.close(attempt, STOPPED)
        await self._flush(machine_id, attempt.source)

    async def _flush(self, machine_id: str, source: str) -> None:
        """Send the cumulative acknowledgement once every record below it is settled."""
        through = self.ledger.of(source).advance()
        if through is not None and await self.send(machine_id, AckFrame("ack", source, through)):
            self.trace.emit("record_acknowledged", source=source, through=through)

    async def on_request(self, request: MachineLeaseRequest) -> list[object]:
        """The assignment actor's answer (a grant or a refusal), written before it is sent."""
        lease = self.leases.leases.get(request.assignment_id)
        if lease is None or lease.row.machine_id != request.node_id:
            return [RefusedFrame("refused", request.request_id, "unknown")]
        answers: list[object] = await self.assignments.ask(
            request.assignment_id, LeaseRequest(request), within=ASK_S)  # fmt: skip
        return answers

    async def on_status(self, status: NodeStatus) -> None:
        """Each of the machine's assignment actors takes the status, in turn."""
        self.trace.emit("report_received", status=to_wire(status),
                        control_mono_ms=self.clock.monotonic_ms())  # fmt: skip
        for lease in self.leases.of_machine(status.node_id):
            try:
                await self.assignments.ask(lease.row.assignment_id, Status(status), within=ASK_S)
            except (MaiaError, ActorError):  # its next status or timer tries again
                log.warning("assignment %s did not take a status", lease.row.assignment_id,
                            exc_info=True)  # fmt: skip
        await self.ask_again(status.node_id)

    def link_opened(self, link: LinkState) -> None:
        link.barrier = self.leases.barrier(link.machine_id)
