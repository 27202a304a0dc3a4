"""The Execution Node's assignments: one pure Node lease machine each (`supervision.leases`,
carried unchanged), and the workers it runs for Control under them.

Frames from Control drive the machines (`launch_assignment` -> Launch, `grant` ->
GrantArrived) and the workers (`launch_worker`, `prompt`, `interrupt`, `stop_worker`,
`abandon`);
a wake every second (Wake) renews, retries, and at the local deadline starts the bounded
stop of that assignment's workers: stopping, then stopped once every one has exited
(CleanupConfirmed), reported at once. A worker is admitted only while the lease holds and
the spool admits (WorkArrived), and only when the launch's digest is that of the spec it
carries. Every turn event is an evidence record (per-source sequence from 1) until Control
acknowledges it cumulatively; its frame is kept (`EvidenceOutbox`) and sent again on the
next connection when the link drops before the acknowledgement. Figures (deadline, stop
start, stop end) are logged.
"""

from __future__ import annotations

import contextlib
import logging
import secrets
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Final

import trio

from actors.machine import (
    AbandonFrame,
    AckFrame,
    GrantFrame,
    InterruptFrame,
    LaunchAssignmentFrame,
    LaunchWorkerFrame,
    MachineTrace,
    PromptFrame,
    RefusedFrame,
    StopWorkerFrame,
    TurnEventFrame,
    WorkerFrame,
    spec_digest,
)
from maia.core import Clock, MaiaError
from supervision.leases import (
    CleanupConfirmed,
    GrantApplied,
    GrantArrived,
    GrantRefused,
    Launch,
    MachineLeaseReport,
    NodeAction,
    NodeEvent,
    NodeLeaseState,
    Reading,
    ReportNow,
    SendRequest,
    StopExecution,
    Wake,
    WorkAdmitted,
    WorkArrived,
    WorkRefused,
    node_report,
    node_restarted,
    node_step,
)
from supervision.leases._evolve import evolve
from supervision.workers import WorkerSpec

from ._exec_state import load_states, previous_boots, save_states
from ._frames import LeaseRequestFrame
from ._outbox import EvidenceOutbox
from ._outbox_store import OutboxStore, restored_spool

log = logging.getLogger("maia.machines")
WAKE_S: Final = 1.0
STOP_S: Final = 10.0  # STOP_BOUND_MS: the workers' bounded stop
SEEN_ATTEMPTS: Final = 256  # launches remembered, so a replayed one starts nothing
HELLO_ATTEMPTS: Final = 256  # what a hello frame may list
Send = Callable[[object], Awaitable[bool]]


class ExecutionAssignments:
    """See the module. `send` puts a frame on the link (False while it is down)."""

    def __init__(self, home: Path, machine_id: str, clock: Clock, supervisor: Any,
                 send: Send, report_now: Callable[[], Awaitable[None]],
                 trace: MachineTrace | None = None,
                 store: OutboxStore | None = None) -> None:  # fmt: skip
        self.home = home
        self.store = store  # the outbox on the Node's SQLite (None: in memory only)
        self.machine_id = machine_id
        self.clock = clock
        self.supervisor = supervisor
        self.send = send
        self.report_now = report_now
        self.boot = secrets.token_hex(4)
        self.states: dict[str, NodeLeaseState] = {}
        self.workers: dict[str, tuple[str, int, Any]] = {}  # control attempt -> aid, epoch, h
        self.figures: list[dict[str, Any]] = []
        self.trace = trace if trace is not None else MachineTrace(None, clock)
        self._prompted: dict[str, str] = {}  # attempt -> the last turn prompted (replays)
        self._seen: list[str] = []  # attempts launched in this run, newest last (bounded)
        self._nursery: trio.Nursery | None = None
        self.outbox = EvidenceOutbox(send)

    def link_opened(self) -> None:
        """A connection to Control opened: what it did not acknowledge goes again, first."""
        self.outbox.rewind()

    async def resend(self) -> None:
        count = await self.outbox.resend_all()
        if count:
            log.info("%d evidence records sent again after the link reopened", count)

    def now(self) -> Reading:
        return Reading(wall=self.clock.wall_ms(), mono=self.clock.monotonic_ms())

    def live_attempts(self) -> tuple[str, ...]:
        """What hello lists: running attempts and those whose exit Control has not heard
        (it must not end them before their turn's evidence, sent after hello, arrives)."""
        found = tuple(dict.fromkeys((*self.workers, *self.outbox.waiting_attempts())))
        return found[:HELLO_ATTEMPTS]  # running ones first; the oldest exits may drop out

    def reports(self) -> tuple[MachineLeaseReport, ...]:
        now = self.now()
        found = (node_report(state, now) for state in self.states.values())
        return tuple(report for report in found if report is not None)

    async def run(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            boots = previous_boots(self.home)
            loaded = load_states(self.home, self.boot, self.now().mono)
            sources, kept = ([], []) if self.store is None else await self.store.load()
            for key, state in loaded.items():
                spool = restored_spool(state.spool, sources, kept, self.now().mono)
                loaded[key] = evolve(state, spool=spool)
            for key, state in loaded.items():
                # A restart: every execution of the last run is gone (the supervisor swept
                # this home's strays at its start), so its stop is confirmed at once.
                if key in boots and state.lease_epoch > 0:
                    self.trace.emit("run_stopped", node_id=self.machine_id, assignment_id=key,
                                    lease_epoch=state.lease_epoch, run_id=boots[key])  # fmt: skip
                state, actions = node_restarted(state, self.boot)
                self.states[key] = state
                await self._apply(key, actions)
            if self.states:
                save_states(self.home, self.states)  # this run's boot, for the next restart
            await self._resend_kept(kept)
            task_status.started()
            while True:
                await trio.sleep(self._next_wake_s())
                for key in list(self.states):
                    await self._step(key, Wake())
                await self.outbox.flush()  # an exit whose acknowledgement wait ran out

    async def _resend_kept(self, kept: list[Any]) -> None:
        """The records the last run kept and Control never acknowledged go first on the
        next connection; their attempts died with that run, so each gets an `exited` after
        them (hello lists it until then: Control takes the records before the exit)."""
        spools = {state.spool.source_id: state.spool for state in self.states.values()}
        attempts: dict[str, None] = {}
        for record in kept:
            spool = spools.get(record.source_id)
            if spool is None or record.sequence <= spool.acknowledged_through:
                continue  # an assignment this Node no longer holds, or acknowledged already
            self.outbox.keep(record.source_id, record.sequence, record.frame, record.size,
                             record.attempt_id)  # fmt: skip
            attempts[str(getattr(record.frame, "attempt_id", ""))] = None
        for attempt in attempts:
            gone = WorkerFrame("worker", attempt, "exited", fence_reason="the Execution Node"
                               " restarted", stop_phase="kill")  # fmt: skip
            await self.outbox.send_after_records(attempt, gone, exit_frame=True)
        if kept:
            log.info("%d unacknowledged evidence records kept from the last run", len(kept))

    def _next_wake_s(self) -> float:
        """A second, or less: exactly at the nearest local deadline (item 8: the stop begins
        no later than it)."""
        now = self.now().mono
        deadlines = [
            s.deadline_ms
            for s in self.states.values()
            if s.deadline_ms is not None and s.deadline_ms > now and not s.expired
        ]
        if not deadlines:
            return WAKE_S
        return max(0.0, min(WAKE_S, (min(deadlines) - now) / 1000))

    async def _step(self, key: str, event: NodeEvent) -> tuple[NodeAction, ...]:
        before = self.states[key]
        state, actions = node_step(before, event, self.now())
        self.states[key] = state
        if (state.phase, state.applied_pair, state.lease_epoch) != (
            before.phase, before.applied_pair, before.lease_epoch
        ):  # fmt: skip
            save_states(self.home, self.states)
        await self._apply(key, actions)
        return actions

    async def _apply(self, key: str, actions: tuple[NodeAction, ...]) -> None:
        for action in actions:
            if isinstance(action, SendRequest):
                await self.send(LeaseRequestFrame("lease_request", action.request))
            elif isinstance(action, StopExecution):
                assert self._nursery is not None
                self._nursery.start_soon(self._stop_assignment, key, action)
            elif isinstance(action, ReportNow):
                await self.report_now()
            elif isinstance(action, GrantApplied):
                log.info("assignment %s: grant %s applied, local deadline at mono %d ms",
                         key, action.pair, action.deadline_ms)  # fmt: skip
            elif isinstance(action, GrantRefused):
                log.warning("assignment %s: grant %s refused (%s)", key, action.request_id,
                            action.reason)  # fmt: skip

    async def _stop_assignment(self, key: str, action: StopExecution) -> None:
        """The bounded stop of item 8: every worker of the epoch, then CleanupConfirmed."""
        started = self.now().mono
        deadline = self.states[key].deadline_ms
        log.warning("assignment %s epoch %d: bounded stop begins (%s) at mono %d ms, local"
                    " deadline %s", key, action.lease_epoch, action.reason, started,
                    deadline)  # fmt: skip
        handles = [(attempt, h) for attempt, (aid, _, h) in self.workers.items() if aid == key]
        with trio.move_on_after(STOP_S):
            async with trio.open_nursery() as nursery:
                for _, handle in handles:
                    nursery.start_soon(_stop_quietly, handle, action.reason)
        if any(h.exit_info is None for _, h in handles):
            log.error("assignment %s: cleanup not confirmed; it stays stopping", key)
            return
        ended = self.now().mono
        self.figures.append({"assignment": key, "reason": action.reason, "deadlineMs": deadline,
                             "stopStartMs": started, "stopEndMs": ended})  # fmt: skip
        log.warning("assignment %s epoch %d: stopped at mono %d ms (stop took %d ms)", key,
                    action.lease_epoch, ended, ended - started)  # fmt: skip
        await self._step(key, CleanupConfirmed(action.lease_epoch))

    # -- frames from Control -----------------------------------------------------------

    async def on_frame(self, frame: Any) -> None:
        if isinstance(frame, LaunchAssignmentFrame):
            await self._launch(frame)
        elif isinstance(frame, GrantFrame):
            key = frame.grant.assignment_id
            if key in self.states:
                await self._step(key, GrantArrived(frame.grant))
        elif isinstance(frame, RefusedFrame):
            log.warning("lease request %s refused: %s", frame.request_id, frame.reason)
        elif isinstance(frame, LaunchWorkerFrame):
            await self._launch_worker(frame)
        elif isinstance(frame, AckFrame):
            for key, state in self.states.items():
                if state.spool.source_id == frame.source_id:
                    spool = state.spool.acknowledge(frame.through)
                    self.states[key] = evolve(state, spool=spool)
                    # Only an ack frame says Control stored them (a grant's acknowledgedThrough
                    # follows the Node's reports): the frames are kept until one comes.
                    through = min(frame.through, spool.last_sequence)
                    self.outbox.acknowledge(spool.source_id, through)
                    if self.store is not None:
                        await self.store.release(spool.source_id, through)
            await self.outbox.flush()  # an exit may have waited for this acknowledgement
        elif isinstance(frame, PromptFrame | InterruptFrame | StopWorkerFrame):
            await self._worker_op(frame)
        elif isinstance(frame, AbandonFrame):
            self._abandon(frame)

    async def _launch(self, frame: LaunchAssignmentFrame) -> None:
        assignment = frame.assignment
        key = assignment.assignment_id
        if key not in self.states:
            self.states[key] = NodeLeaseState(node_id=self.machine_id, assignment_id=key,
                                              boot=self.boot)  # fmt: skip
        await self._step(key, Launch(frame.lease_epoch))

    async def _launch_worker(self, frame: LaunchWorkerFrame) -> None:
        async def refuse(reason: str) -> None:
            await self.send(WorkerFrame("worker", frame.attempt_id, "refused", reason=reason))

        key = frame.assignment_id
        if frame.attempt_id in self._seen:
            return None  # a replayed launch: the attempt runs (or ran) once, nothing changes
        if key not in self.states:
            return await refuse("unknown_assignment")
        if spec_digest(frame.spec) != frame.environment_digest:
            return await refuse("environment_digest_mismatch")
        actions = await self._step(key, WorkArrived(frame.attempt_id, frame.lease_epoch))
        refused = [a for a in actions if isinstance(a, WorkRefused)]
        if refused:
            return await refuse(refused[0].reason)
        spec = frame.spec
        session = spec.activation.get("sessionId", "session")
        state_dir = self.home / "machine-state" / session
        state_dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        local = WorkerSpec(argv=spec.argv, cwd=spec.cwd, env=spec.env, options=spec.options,
                           activation={**spec.activation, "stateDir": str(state_dir)})  # fmt: skip
        try:
            handle = await self.supervisor.start_worker(local)
        except Exception as error:
            return await refuse(f"start failed: {error}"[:256])
        self._seen = [*self._seen[-(SEEN_ATTEMPTS - 1) :], frame.attempt_id]
        if not self._running(key, frame.lease_epoch):
            self.trace.emit("run_started", node_id=self.machine_id, assignment_id=key,
                            lease_epoch=frame.lease_epoch, run_id=self.boot)  # fmt: skip
        self.workers[frame.attempt_id] = (key, frame.lease_epoch, handle)
        admitted = [a.sequence for a in actions if isinstance(a, WorkAdmitted)]
        spawned = WorkerFrame("worker", frame.attempt_id, "spawned", pid=handle.pid,
                              sequence=admitted[0] if admitted else None)  # fmt: skip
        if admitted:  # the admission's evidence record: kept and sent like a turn's
            source = self.states[key].spool.source_id
            self.outbox.keep(source, admitted[0], spawned, saved=self.store is None)
            if self.store is not None:  # durable before it is sent
                try:
                    await self.store.put(source, admitted[0], spawned, 1, None)
                finally:  # a failed write must not hold back every later frame
                    self.outbox.saved(source, admitted[0])
            await self.outbox.flush()
        else:
            await self.send(spawned)
        assert self._nursery is not None
        self._nursery.start_soon(self._watch, frame.attempt_id, handle)

    async def _watch(self, attempt_id: str, handle: Any) -> None:
        try:
            await handle.wait_initialized()
            initialized = WorkerFrame("worker", attempt_id, "initialized")
            await self.outbox.send_after_records(attempt_id, initialized, initialized=True)
            log.info("attempt %s initialized", attempt_id)
        except Exception:
            pass
        info = await handle.wait_stopped()
        entry = self.workers.pop(attempt_id, None)
        self._prompted.pop(attempt_id, None)
        if entry is not None and not self._running(entry[0], entry[1]):
            self.trace.emit("run_stopped", node_id=self.machine_id, assignment_id=entry[0],
                            lease_epoch=entry[1], run_id=self.boot)  # fmt: skip
        exited = WorkerFrame("worker", attempt_id, "exited", returncode=info.returncode,
                             signal=info.signal, fence_reason=info.fence_reason,
                             stop_phase=info.stop_phase,
                             stderr_tail=info.stderr_tail[-8192:])  # fmt: skip
        await self.outbox.send_after_records(attempt_id, exited, exit_frame=True)

    def _running(self, key: str, epoch: int) -> bool:
        """Whether a worker of the assignment's epoch still runs here (one execution)."""
        return any((aid, e) == (key, epoch) for aid, e, _ in self.workers.values())

    async def _worker_op(self, frame: PromptFrame | InterruptFrame | StopWorkerFrame) -> None:
        entry = self.workers.get(frame.attempt_id)
        if entry is None:
            return  # an attempt this Node does not run: changes nothing
        key, _, handle = entry
        assert self._nursery is not None
        if isinstance(frame, PromptFrame):
            if self._prompted.get(frame.attempt_id) == frame.turn_id:
                return  # a replayed prompt: that turn runs once
            self._prompted[frame.attempt_id] = frame.turn_id
            self._nursery.start_soon(self._turn, key, frame, handle)
        elif isinstance(frame, InterruptFrame):
            self._nursery.start_soon(_quietly, handle.interrupt, frame.turn_id)
        else:
            self._nursery.start_soon(_stop_quietly, handle, frame.reason)

    def _abandon(self, frame: AbandonFrame) -> None:
        """Control gave the turn up before any event of it reached Control: the turn never
        starts here (a prompt of it still to come is dropped as a replay) and the worker is
        fenced: no frame of it is read any more and it is stopped at once, with no graceful
        phase (its `exited` frame frees the Session). A start this Node read but Control
        had not yet received goes too: Control drops what of that turn still comes."""
        entry = self.workers.get(frame.attempt_id)
        if entry is None:
            return  # gone already: its exited frame is (or was) on its way
        self._prompted[frame.attempt_id] = frame.turn_id
        log.info("attempt %s: turn %s given up at Control: fencing the worker",
                 frame.attempt_id, frame.turn_id)  # fmt: skip
        entry[2].fence(frame.reason)

    async def _turn(self, key: str, frame: PromptFrame, handle: Any) -> None:
        try:
            events = handle.prompt(frame.turn_id, frame.text)
        except Exception as error:
            await self._evidence(key, frame, "failed", str(error)[:1024], None)
            return
        async with contextlib.aclosing(events):  # closed early: the worker finishes it
            await self._relay_turn(key, frame, handle, events)

    async def _relay_turn(self, key: str, frame: PromptFrame, handle: Any, events: Any) -> None:
        async for event in events:
            try:
                await self._evidence(key, frame, event.kind, event.text, event.data)
            except MaiaError as error:  # the spool is at a bound: admission stopped
                # Spec MN0: interrupt safely within a bound and say the outcome is uncertain;
                # nothing more of this turn is sent, and nothing is dropped silently.
                log.error("assignment %s: %s; turn %s interrupted, its outcome uncertain",
                          key, error.message, frame.turn_id)  # fmt: skip
                self._nursery_start(_quietly, handle.interrupt, frame.turn_id)
                break

    def _nursery_start(self, function: Any, *args: Any) -> None:
        assert self._nursery is not None
        self._nursery.start_soon(function, *args)

    async def _evidence(self, key: str, frame: PromptFrame, kind: str, text: str | None,
                        data: dict[str, Any] | None) -> None:  # fmt: skip
        state = self.states[key]
        size = max(1, len(text or ""))
        self.outbox.check_room(state.spool.source_id, size)  # `held` at a quota: none dropped
        spool = state.spool.append(size, self.now().mono)
        self.states[key] = evolve(state, spool=spool)
        record = TurnEventFrame("turn_event", frame.attempt_id, frame.turn_id, kind,
                                spool.source_id, spool.last_sequence, text, data)  # fmt: skip
        sequence = spool.last_sequence
        self.outbox.keep(spool.source_id, sequence, record, size, frame.attempt_id,
                         saved=self.store is None)  # fmt: skip
        if self.store is not None:  # durable before it is sent (no flush sends it earlier)
            try:
                await self.store.put(spool.source_id, sequence, record, size,
                                     frame.attempt_id)  # fmt: skip
            finally:  # a failed write must not hold back every later frame
                self.outbox.saved(spool.source_id, sequence)
        await self.outbox.flush()  # in sequence order, after anything not yet acknowledged


async def _stop_quietly(handle: Any, reason: str) -> None:
    try:
        await handle.stop(reason)
    except Exception:
        log.warning("a relayed worker's stop did not complete")


async def _quietly(function: Callable[[str], Awaitable[None]], argument: str) -> None:
    try:
        await function(argument)
    except Exception:
        log.info("a relayed interrupt found no turn")
