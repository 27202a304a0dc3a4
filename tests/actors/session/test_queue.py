"""The pure turn queue: examples, then a Hypothesis state machine holding its invariants."""

from __future__ import annotations

import attrs
import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from actors.session import (
    Abandon,
    Cancel,
    Close,
    Dispatch,
    FailTurn,
    Interrupt,
    QueueAction,
    QueueState,
    ReleaseAt,
    Send,
    SendInterrupt,
    StartWorker,
    StopWorker,
    Tick,
    TurnEnded,
    Wake,
    Worker,
    WorkerGone,
    WorkerReady,
    recover,
    step,
)
from maia.protocol import MaiaError


def test_first_send_starts_a_worker_then_dispatches_in_order() -> None:
    """Sends queue; the worker starts once; ready dispatches the first, each end the next."""
    state, actions = step(QueueState(), Send("t1"), 0)
    assert actions == (StartWorker(),)
    state, actions = step(state, Send("t2"), 0)
    assert actions == ()
    state, actions = step(state, WorkerReady(), 1)
    assert actions == (Dispatch("t1"),)
    assert (state.position("t1"), state.position("t2")) == (0, 1)
    state, actions = step(state, TurnEnded("t1"), 2)
    assert actions == (Dispatch("t2"),)
    state, actions = step(state, TurnEnded("t2"), 3)
    assert actions == (ReleaseAt(3 + state.idle_ms),)
    state, actions = step(state, Tick(), 3 + state.idle_ms)
    assert actions == (StopWorker("idle"),)


def test_ninth_send_is_queue_full_and_changes_nothing() -> None:
    """Eight pending (the running one included) is the limit: the ninth is turn_queue_full."""
    state = QueueState(worker=Worker.READY)
    for number in range(8):
        state, _ = step(state, Send(f"t{number}"), 0)
    assert state.pending == 8
    assert state.active == "t0"
    with pytest.raises(MaiaError) as caught:
        step(state, Send("t8"), 0)
    assert caught.value.code == "turn_queue_full"
    assert state.pending == 8


def test_cancel_queued_and_refuse_cancel_of_active() -> None:
    """A queued turn cancels to failed turn_rejected; the active one is turn_not_queued."""
    state = QueueState(worker=Worker.READY)
    state, _ = step(state, Send("t1"), 0)
    state, _ = step(state, Send("t2"), 0)
    state, actions = step(state, Cancel("t2"), 0)
    assert actions == (FailTurn("t2", "turn_rejected"),)
    with pytest.raises(MaiaError) as caught:
        step(state, Cancel("t1"), 0)
    assert caught.value.code == "turn_not_queued"
    state, actions = step(state, Interrupt("t1"), 0)
    assert actions == (SendInterrupt("t1"),)
    assert step(state, Interrupt("t1"), 0) == (state, ())


def test_an_abandoned_turn_leaves_with_its_worker_and_the_next_gets_a_new_one() -> None:
    """Abandon of the dispatched turn: no longer active, the worker stopping (fenced by the
    actor); only the dispatched turn can be abandoned; its worker's exit starts the next."""
    state = QueueState(worker=Worker.READY)
    state, _ = step(state, Send("t1"), 0)
    state, _ = step(state, Send("t2"), 0)
    with pytest.raises(MaiaError) as caught:
        step(state, Abandon("t2"), 0)
    assert caught.value.code == "invalid_state"
    state, actions = step(state, Abandon("t1"), 0)
    assert (actions, state.active, state.worker, state.queued) == (
        (), None, Worker.STOPPING, ("t2",))  # fmt: skip
    state, actions = step(state, Send("t3"), 0)
    assert actions == ()  # nothing dispatches to the fenced worker
    state, actions = step(state, WorkerGone(expected=True), 1)
    assert actions == (StartWorker(),)
    state, actions = step(state, WorkerReady(), 2)
    assert actions == (Dispatch("t2"),)


def test_recovery_fails_the_lost_turn_and_restarts_for_the_queue() -> None:
    """After a restart the running turn fails runtime_lost; queued ones get a new worker."""
    state, actions = recover(("t2", "t3"), ("t1",), limit=8, idle_ms=10, now=0)
    assert actions == (FailTurn("t1", "runtime_lost"), StartWorker())
    state, actions = step(state, WorkerReady(), 1)
    assert actions == (Dispatch("t2"),)


def test_a_worker_that_never_starts_fails_the_waiting_turns() -> None:
    """A worker lost while starting fails the queue worker_failed and closes the Session."""
    state, _ = step(QueueState(), Send("t1"), 0)
    state, actions = step(state, WorkerGone(), 0)
    assert actions == (FailTurn("t1", "worker_failed"),)
    assert state.closed
    with pytest.raises(MaiaError):
        step(state, Send("t2"), 0)


def test_without_an_activation_the_turn_waits_until_wake() -> None:
    """With no activation (may_dispatch False) a ready worker's turn stays queued; Wake with
    one dispatches it, and Wake without one does nothing."""
    state, _ = step(QueueState(), Send("t1"), 0)
    state, actions = step(state, WorkerReady(), 1, may_dispatch=False)
    assert (actions, state.queued, state.active) == ((), ("t1",), None)
    assert step(state, Wake(), 2, may_dispatch=False) == (state, ())
    state, actions = step(state, Wake(), 3)
    assert (actions, state.active) == ((Dispatch("t1"),), "t1")


class QueueMachine(RuleBasedStateMachine):
    """Random interleavings of sends, cancels, worker life, turn ends and the activation
    gate (maxConcurrentActivations) opening and closing."""

    def __init__(self) -> None:
        super().__init__()
        self.state = QueueState(idle_ms=5)
        self.now = 0
        self.counter = 0
        self.sent: list[str] = []
        self.dispatched: list[str] = []
        self.failed: dict[str, str] = {}
        self.ended: set[str] = set()
        self.open = True  # an activation is available

    def apply(self, event: object) -> None:
        before = self.state
        try:
            self.state, actions = step(
                self.state,
                event,  # type: ignore[arg-type]
                self.now,
                may_dispatch=self.open,
            )
        except MaiaError:
            assert self.state == before
            return
        self.record(actions)

    def record(self, actions: tuple[QueueAction, ...]) -> None:
        for action in actions:
            if isinstance(action, Dispatch):
                assert self.open, "dispatched without an activation"
                assert action.turn_id not in self.dispatched, "dispatched twice"
                assert action.turn_id not in self.failed
                self.dispatched.append(action.turn_id)
            elif isinstance(action, FailTurn):
                assert action.turn_id not in self.failed, "failed twice"
                self.failed[action.turn_id] = action.reason

    @rule()
    def send(self) -> None:
        self.counter += 1
        turn = f"t{self.counter}"
        if self.state.closed or self.state.pending >= self.state.limit:
            code = "invalid_state" if self.state.closed else "turn_queue_full"
            with pytest.raises(MaiaError) as caught:
                step(self.state, Send(turn), self.now)
            assert caught.value.code == code
            return
        self.state, actions = step(self.state, Send(turn), self.now, may_dispatch=self.open)
        self.sent.append(turn)
        self.record(actions)

    @rule(data=st.data())
    def cancel(self, data: st.DataObject) -> None:
        if not self.sent:
            return
        turn = data.draw(st.sampled_from(self.sent))
        if turn not in self.state.queued:
            with pytest.raises(MaiaError) as caught:
                step(self.state, Cancel(turn), self.now)
            assert caught.value.code == "turn_not_queued"
            return
        self.state, actions = step(self.state, Cancel(turn), self.now)
        assert actions == (FailTurn(turn, "turn_rejected"),)
        self.record(actions)

    @rule()
    def interrupt_active(self) -> None:
        if self.state.active is not None:
            self.apply(Interrupt(self.state.active))

    @rule()
    def abandon_active(self) -> None:
        active = self.state.active
        if active is not None and self.state.worker is Worker.READY:
            self.apply(Abandon(active))
            self.ended.add(active)

    @precondition(lambda self: self.state.worker is Worker.STARTING)
    @rule()
    def worker_ready(self) -> None:
        self.apply(WorkerReady())

    @rule(expected=st.booleans())
    def worker_gone(self, expected: bool) -> None:
        self.apply(WorkerGone(expected=expected))

    @precondition(lambda self: self.state.active is not None)
    @rule()
    def turn_ends(self) -> None:
        assert self.state.active is not None
        self.ended.add(self.state.active)
        self.apply(TurnEnded(self.state.active))

    @rule(ms=st.integers(0, 10))
    def tick(self, ms: int) -> None:
        self.now += ms
        self.apply(Tick())

    @rule()
    def close(self) -> None:
        self.apply(Close())

    @rule(available=st.booleans())
    def activation(self, available: bool) -> None:
        """The activation gate changes; a Session given one is woken (as the actor is)."""
        self.open = available
        if available:
            self.apply(Wake())

    @invariant()
    def bounded(self) -> None:
        assert self.state.pending <= self.state.limit

    @invariant()
    def dispatch_follows_send_order(self) -> None:
        order = {turn: i for i, turn in enumerate(self.sent)}
        positions = [order[t] for t in self.dispatched]
        assert positions == sorted(positions)

    @invariant()
    def queue_keeps_send_order_and_has_no_finished_turn(self) -> None:
        order = {turn: i for i, turn in enumerate(self.sent)}
        positions = [order[t] for t in self.state.queued]
        assert positions == sorted(positions)
        for turn in self.state.queued:
            assert turn not in self.dispatched
            assert turn not in self.failed

    @invariant()
    def no_idle_worker_with_work(self) -> None:
        s = self.state
        if not s.closed and s.worker is Worker.READY and s.active is None and self.open:
            assert not s.queued
        if not s.closed and s.queued and s.active is None:
            assert s.worker is not Worker.NONE  # a worker was asked for


QueueMachine.TestCase.settings = settings(max_examples=150, stateful_step_count=40)
TestQueueMachine = QueueMachine.TestCase


def test_queue_state_has_no_validators_so_its_slot_copying_evolve_is_attrs_evolve() -> None:
    """The queue moves its state with supervision.leases' evolve, which skips __init__:
    that is attrs.evolve only while QueueState declares no validator or converter."""
    assert all(f.validator is None and f.converter is None for f in attrs.fields(QueueState))
