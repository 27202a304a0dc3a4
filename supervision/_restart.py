"""The restart policy: a pure function of (state, event, now) -> (state, actions).

Supervisors decide what to do about a child's exit here, with no loop, no clock and no
randomness of their own: `now_ms` comes in as an argument and the jitter draw travels in the
event. So a Hypothesis state machine can drive it through thousands of histories, and a
supervisor's behaviour under `MockClock` is this function plus plumbing.

Rules (Erlang/OTP's, plus backoff):
  * permanent children are always restarted, transient ones only after a failure, temporary
    ones never (they are removed);
  * one_for_one and dynamic restart the child alone; one_for_all stops the others (reverse
    start order) and restarts all; rest_for_one does that for the children started after it;
  * more than `intensity` restarts within `period_ms` and the supervisor gives up: it stops
    every child and fails to its parent;
  * a restart waits an exponential backoff with jitter, counted per child over consecutive
    failures; a child that ran `stable_ms` or longer starts again from the first step.
"""

from __future__ import annotations

import enum

import attrs


class RestartType(enum.Enum):
    PERMANENT = "permanent"
    TRANSIENT = "transient"
    TEMPORARY = "temporary"


class Strategy(enum.Enum):
    ONE_FOR_ONE = "one_for_one"
    ONE_FOR_ALL = "one_for_all"
    REST_FOR_ONE = "rest_for_one"
    DYNAMIC = "dynamic"  # many like children added at run time, each restarted alone


def _non_negative(_: object, attribute: attrs.Attribute[int], value: int) -> None:
    if value < 0:
        raise ValueError(f"{attribute.name} must not be negative")


@attrs.frozen
class RestartPolicy:
    """How often and how fast a supervisor restarts."""

    intensity: int = attrs.field(default=3, validator=_non_negative)
    period_ms: int = attrs.field(default=5_000, validator=_non_negative)
    backoff_initial_ms: int = attrs.field(default=100, validator=_non_negative)
    backoff_max_ms: int = attrs.field(default=30_000, validator=_non_negative)
    backoff_multiplier: float = 2.0
    jitter: float = 0.2  # the delay is scaled by a factor in [1 - jitter, 1 + jitter]
    stable_ms: int = attrs.field(default=60_000, validator=_non_negative)

    def backoff_ms(self, failures: int, draw: float) -> int:
        """The delay before restart number `failures` (1-based) of one child."""
        if failures <= 0:
            return 0
        base = self.backoff_initial_ms * self.backoff_multiplier ** min(failures - 1, 64)
        scaled = min(float(self.backoff_max_ms), base) * (1 + self.jitter * (2 * draw - 1))
        return max(0, min(self.backoff_max_ms, round(scaled)))


@attrs.frozen
class ChildRecord:
    name: str
    restart: RestartType
    running: bool = False
    started_ms: int = 0
    failures: int = 0  # consecutive, reset after a stable run
    restarts: int = 0


@attrs.frozen
class PolicyState:
    strategy: Strategy
    children: tuple[ChildRecord, ...] = ()  # in start order
    restart_times: tuple[int, ...] = ()  # restarts within the current window
    gave_up: bool = False

    def child(self, name: str) -> ChildRecord | None:
        for record in self.children:
            if record.name == name:
                return record
        return None


# -- events ------------------------------------------------------------------------------


@attrs.frozen
class ChildAdded:
    name: str
    restart: RestartType


@attrs.frozen
class ChildStarted:
    name: str


@attrs.frozen
class ChildExited:
    name: str
    failed: bool
    draw: float = 0.5  # a uniform draw in [0, 1) for the jitter


Event = ChildAdded | ChildStarted | ChildExited

# -- actions -----------------------------------------------------------------------------


@attrs.frozen
class StopChildren:
    names: tuple[str, ...]  # already in the order to stop them (reverse start order)


@attrs.frozen
class StartChildren:
    names: tuple[str, ...]  # in start order
    delay_ms: int


@attrs.frozen
class RemoveChild:
    name: str


@attrs.frozen
class GiveUp:
    reason: str


Action = StopChildren | StartChildren | RemoveChild | GiveUp


def decide(
    policy: RestartPolicy, state: PolicyState, event: Event, now_ms: int
) -> tuple[PolicyState, tuple[Action, ...]]:
    """The next state and what the supervisor must do. Pure; raises nothing on stale input
    (an exit of a child that is not running changes nothing)."""
    if state.gave_up:
        return state, ()
    match event:
        case ChildAdded(name=name, restart=restart):
            if state.child(name) is not None:
                return state, ()
            record = ChildRecord(name, restart)
            return attrs.evolve(state, children=(*state.children, record)), ()
        case ChildStarted(name=name):
            return _replace(state, name, running=True, started_ms=now_ms), ()
        case ChildExited():
            return _exited(policy, state, event, now_ms)


def _replace(state: PolicyState, name: str, **changes: object) -> PolicyState:
    children = tuple(
        attrs.evolve(c, **changes) if c.name == name else c  # type: ignore[arg-type]
        for c in state.children
    )
    return attrs.evolve(state, children=children)


def _exited(
    policy: RestartPolicy, state: PolicyState, event: ChildExited, now_ms: int
) -> tuple[PolicyState, tuple[Action, ...]]:
    record = state.child(event.name)
    if record is None or not record.running:
        return state, ()
    state = _replace(state, record.name, running=False)
    wanted = record.restart is RestartType.PERMANENT or (
        record.restart is RestartType.TRANSIENT and event.failed
    )
    if not wanted:
        children = tuple(c for c in state.children if c.name != record.name)
        return attrs.evolve(state, children=children), (RemoveChild(record.name),)
    window = tuple(t for t in state.restart_times if t > now_ms - policy.period_ms)
    if len(window) + 1 > policy.intensity:
        running = tuple(c.name for c in reversed(state.children) if c.running)
        gone = attrs.evolve(
            state,
            children=tuple(attrs.evolve(c, running=False) for c in state.children),
            restart_times=window,
            gave_up=True,
        )
        reason = (f"{len(window) + 1} restarts within {policy.period_ms} ms "
                  f"(intensity {policy.intensity}); last: {record.name}")  # fmt: skip
        return gone, (StopChildren(running), GiveUp(reason))
    stable = now_ms - record.started_ms >= policy.stable_ms
    failures = (0 if stable else record.failures) + 1
    delay = policy.backoff_ms(failures, event.draw)
    state = _replace(state, record.name, failures=failures, restarts=record.restarts + 1)
    state = attrs.evolve(state, restart_times=(*window, now_ms))
    position = next(i for i, c in enumerate(state.children) if c.name == record.name)
    match state.strategy:
        case Strategy.ONE_FOR_ALL:
            affected = state.children
        case Strategy.REST_FOR_ONE:
            affected = state.children[position:]
        case _:
            affected = (state.children[position],)
    others = [c for c in affected if c.name != record.name]
    actions: list[Action] = []
    to_stop = tuple(c.name for c in reversed(others) if c.running)
    if to_stop:
        actions.append(StopChildren(to_stop))
    for c in others:
        if c.running:
            state = _replace(state, c.name, running=False)
        if c.restart is RestartType.TEMPORARY:
            state = attrs.evolve(state, children=tuple(x for x in state.children if x is not c
                                                       and x.name != c.name))  # fmt: skip
            actions.append(RemoveChild(c.name))
    restart = tuple(c.name for c in affected if c.restart is not RestartType.TEMPORARY)
    actions.append(StartChildren(restart, delay))
    return state, tuple(actions)
