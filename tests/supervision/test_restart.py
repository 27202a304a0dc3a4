"""The pure restart policy: backoff arithmetic and a Hypothesis state machine over decide()."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from supervision import (
    ChildAdded,
    ChildExited,
    ChildStarted,
    GiveUp,
    PolicyState,
    RemoveChild,
    RestartPolicy,
    RestartType,
    StartChildren,
    StopChildren,
    Strategy,
    decide,
)


@given(failures=st.integers(1, 200), draw=st.floats(0, 1, exclude_max=True))
def test_backoff_bounds(failures: int, draw: float) -> None:
    """Backoff never exceeds its maximum and stays within the jitter band of its step."""
    policy = RestartPolicy(backoff_initial_ms=100, backoff_max_ms=30_000, jitter=0.2)
    delay = policy.backoff_ms(failures, draw)
    step = min(30_000, 100 * 2 ** min(failures - 1, 64))
    assert 0 <= delay <= 30_000
    assert step * 0.8 - 1 <= delay <= min(30_000, step * 1.2 + 1)


def test_stale_exit_changes_nothing() -> None:
    """An exit for a child that is not running (an old incarnation) is ignored."""
    state = PolicyState(Strategy.ONE_FOR_ONE, ())
    state, _ = decide(RestartPolicy(), state, ChildAdded("a", RestartType.PERMANENT), 0)
    again, actions = decide(RestartPolicy(), state, ChildExited("a", True), 5)
    assert again == state
    assert actions == ()


NAMES = ("a", "b", "c", "d")


class PolicyMachine(RuleBasedStateMachine):
    """Random histories of starts, exits and time: the OTP rules hold at every step."""

    def __init__(self) -> None:
        super().__init__()
        self.policy = RestartPolicy(intensity=3, period_ms=1_000, backoff_initial_ms=50,
                                    backoff_max_ms=2_000, jitter=0.3, stable_ms=5_000)  # fmt: skip
        self.now = 0
        self.restarts: list[int] = []  # the oracle's own record of restart times
        self.state = PolicyState(Strategy.ONE_FOR_ONE)
        self.pending: set[str] = set()

    @initialize(
        strategy=st.sampled_from(Strategy),
        types=st.lists(st.sampled_from(RestartType), min_size=1, max_size=4),
    )
    def setup(self, strategy: Strategy, types: list[RestartType]) -> None:
        self.state = PolicyState(strategy)
        for name, kind in zip(NAMES, types, strict=False):
            self.state, _ = decide(self.policy, self.state, ChildAdded(name, kind), self.now)
            self.state, _ = decide(self.policy, self.state, ChildStarted(name), self.now)

    @rule(ms=st.integers(0, 3_000))
    def advance(self, ms: int) -> None:
        self.now += ms

    @rule()
    def start_pending(self) -> None:
        for name in sorted(self.pending):
            self.state, actions = decide(self.policy, self.state, ChildStarted(name), self.now)
            assert actions == ()
        self.pending.clear()

    @rule(name=st.sampled_from(NAMES), failed=st.booleans(), draw=st.floats(0, 0.999))
    def exit(self, name: str, failed: bool, draw: float) -> None:
        before = self.state
        record = before.child(name)
        self.state, actions = decide(self.policy, before, ChildExited(name, failed, draw), self.now)
        if before.gave_up or record is None or not record.running:
            assert actions == ()
            assert self.state == before
            return
        wanted = record.restart is RestartType.PERMANENT or (
            record.restart is RestartType.TRANSIENT and failed
        )
        if not wanted:
            assert actions == (RemoveChild(name),)
            assert self.state.child(name) is None
            return
        window = [t for t in self.restarts if t > self.now - self.policy.period_ms]
        if len(window) + 1 > self.policy.intensity:
            assert isinstance(actions[-1], GiveUp)
            assert self.state.gave_up
            running = [c.name for c in before.children if c.running and c.name != name]
            stops = [a for a in actions if isinstance(a, StopChildren)]
            assert list(stops[0].names) == running[::-1]
            return
        self.restarts = [*window, self.now]
        start = actions[-1]
        assert isinstance(start, StartChildren)
        assert 0 <= start.delay_ms <= self.policy.backoff_max_ms
        order = [c.name for c in before.children]
        position = order.index(name)
        expected = {
            Strategy.ONE_FOR_ONE: [name],
            Strategy.DYNAMIC: [name],
            Strategy.ONE_FOR_ALL: order,
            Strategy.REST_FOR_ONE: order[position:],
        }[before.strategy]
        temporary = {c.name for c in before.children if c.restart is RestartType.TEMPORARY}
        assert list(start.names) == [n for n in expected if n not in temporary]
        for action in actions:
            if isinstance(action, StopChildren):  # stopped last-started first
                assert list(action.names) == sorted(action.names, key=order.index, reverse=True)
                assert name not in action.names
        self.pending |= set(start.names)

    @invariant()
    def within_intensity(self) -> None:
        assert len(self.state.restart_times) <= self.policy.intensity
        if self.state.gave_up:
            assert not any(c.running for c in self.state.children)

    @invariant()
    def temporary_never_restarted(self) -> None:
        for c in self.state.children:
            if c.restart is RestartType.TEMPORARY:
                assert c.restarts == 0


PolicyMachine.TestCase.settings = settings(max_examples=120, stateful_step_count=30)
test_policy_machine = PolicyMachine.TestCase
