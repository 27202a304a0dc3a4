"""A Hypothesis state machine over the pure routine core: random creates, pauses, resumes,
disables, manual runs, launches, saturation and crashes. Invariants: at most one record per
cron slot, every slot accounted for, at most one unsettled fire per routine, nextFireAt
present exactly while active."""

from __future__ import annotations

from collections import defaultdict

import attrs
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

from actors.routine import (
    Action,
    Attached,
    Core,
    Disable,
    FailReason,
    FireEvent,
    FireState,
    Launched,
    LaunchRefused,
    Pause,
    RecordFire,
    Recover,
    Resume,
    RoutineState,
    Run,
    Schedule,
    SlotsOmitted,
    Tick,
    Trigger,
    TurnSettled,
    cron_fire_id,
    step,
)
from maia.core import MaiaError

MINUTE = 60_000
START = 1_767_225_600_000  # 2026-01-01T00:00Z
SCHEDULES = [("0 * * * *", "UTC"), ("*/15 * * * *", "Europe/Berlin"),
             ("30 1,2 * * *", "America/New_York"), ("0 9 * * 1-5", "Europe/Berlin")]  # fmt: skip
FIRST_RECORDS = (FireEvent.CLAIM, FireEvent.OVERLAP, FireEvent.PASS_OVER)


class RoutineMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.now = START
        self.cores: dict[str, Core] = {}
        # The "storage": every fire's recorded states in order, and the attached Sessions.
        self.history: dict[str, list[FireState]] = defaultdict(list)
        self.first_records: dict[str, int] = defaultdict(int)
        self.slot_of: dict[str, tuple[str, int]] = {}
        self.receipts: dict[str, str] = {}
        self.omitted: dict[str, list[tuple[int, int]]] = defaultdict(list)
        # Per routine: the active spans [from first slot, to covered instant].
        self.spans: dict[str, list[list[int]]] = defaultdict(list)
        self.runs = 0

    def apply(self, routine_id: str, event: object) -> tuple[Action, ...] | None:
        pending = self.cores[routine_id].next_fire_ms
        try:
            moved, actions = step(self.cores[routine_id], event, self.now)  # type: ignore[arg-type]
        except MaiaError:
            return None
        self.cores[routine_id] = moved
        for action in actions:
            if isinstance(action, RecordFire):
                fire = action.fire
                self.history[fire.fire_id].append(fire.state)
                if action.event in FIRST_RECORDS:
                    self.first_records[fire.fire_id] += 1
                if fire.trigger is Trigger.CRON:
                    self.slot_of[fire.fire_id] = (routine_id, fire.scheduled_ms)
            elif isinstance(action, SlotsOmitted):
                assert pending is not None
                self.omitted[routine_id].append((pending, action.before_ms))
        return actions

    def tick(self, routine_id: str, held: bool = False) -> None:
        was_active = self.cores[routine_id].state is RoutineState.ACTIVE
        self.apply(routine_id, Tick(held=held))
        if was_active:
            self.spans[routine_id][-1][1] = self.now

    @rule(schedule=st.sampled_from(SCHEDULES), paused=st.booleans())
    def create(self, schedule: tuple[str, str], paused: bool) -> None:
        routine_id = f"routine_{len(self.cores):032x}"
        parsed = Schedule.parse(*schedule)
        state = RoutineState.PAUSED if paused else RoutineState.ACTIVE
        nxt = None if paused else parsed.next_after(self.now)
        self.cores[routine_id] = Core(routine_id, state, 1, parsed, nxt)
        if not paused:
            self.spans[routine_id].append([self.now, self.now])

    @rule(minutes=st.integers(1, 3 * 24 * 60), held=st.booleans())
    def advance_and_tick(self, minutes: int, held: bool) -> None:
        self.now += minutes * MINUTE
        for routine_id in self.cores:
            self.tick(routine_id, held)

    @precondition(lambda self: self.cores)
    @rule(data=st.data(), stale=st.booleans())
    def pause(self, data: st.DataObject, stale: bool) -> None:
        routine_id = data.draw(st.sampled_from(sorted(self.cores)))
        self.tick(routine_id)  # the actor catches up on what is due before it pauses
        revision = self.cores[routine_id].revision + (1 if stale else 0)
        self.apply(routine_id, Pause(revision))

    @precondition(lambda self: self.cores)
    @rule(data=st.data())
    def resume(self, data: st.DataObject) -> None:
        routine_id = data.draw(st.sampled_from(sorted(self.cores)))
        if self.apply(routine_id, Resume(self.cores[routine_id].revision)) is not None:
            self.spans[routine_id].append([self.now, self.now])

    @precondition(lambda self: self.cores)
    @rule(data=st.data())
    def disable(self, data: st.DataObject) -> None:
        routine_id = data.draw(st.sampled_from(sorted(self.cores)))
        self.tick(routine_id)
        self.apply(routine_id, Disable(self.cores[routine_id].revision))

    @precondition(lambda self: self.cores)
    @rule(data=st.data(), held=st.booleans())
    def run(self, data: st.DataObject, held: bool) -> None:
        routine_id = data.draw(st.sampled_from(sorted(self.cores)))
        before = self.cores[routine_id]
        self.runs += 1
        actions = self.apply(routine_id, Run(f"fire_m{self.runs}", before.revision, held=held))
        if actions is not None:
            assert before.state is RoutineState.ACTIVE
            assert not held
            assert not before.busy

    def launching(self) -> list[tuple[str, str]]:
        return sorted(
            (rid, f.fire_id)
            for rid, c in self.cores.items()
            for f in c.fires
            if f.state is FireState.LAUNCHING and f.claimed_ms is not None
        )

    @precondition(lambda self: self.launching())
    @rule(data=st.data(), answer=st.sampled_from(["attach", "launched", "saturated", "failed"]))
    def launch_answer(self, data: st.DataObject, answer: str) -> None:
        routine_id, fire_id = data.draw(st.sampled_from(self.launching()))
        fire = self.cores[routine_id].fire(fire_id)
        assert fire is not None
        if answer == "attach":
            self.apply(routine_id, Attached(fire_id, f"session_{fire_id}"))
        elif answer == "launched":
            self.receipts[fire_id] = f"turn_{fire_id}"
            self.apply(routine_id, Launched(fire_id, f"session_{fire_id}", f"turn_{fire_id}"))
        else:
            self.now += MINUTE * data.draw(st.integers(0, 12))
            reason = FailReason.SATURATED if answer == "saturated" else FailReason.LAUNCH_FAILED
            self.apply(routine_id, LaunchRefused(fire_id, reason))

    @precondition(lambda self: any(f.state is FireState.STARTED
                                   for c in self.cores.values() for f in c.fires))  # fmt: skip
    @rule(data=st.data())
    def turn_settles(self, data: st.DataObject) -> None:
        started = sorted((rid, f.fire_id) for rid, c in self.cores.items() for f in c.fires
                         if f.state is FireState.STARTED)  # fmt: skip
        routine_id, fire_id = data.draw(st.sampled_from(started))
        self.apply(routine_id, TurnSettled(fire_id))

    @rule(with_receipt=st.booleans())
    def crash(self, with_receipt: bool) -> None:
        """The Node dies: memory (attempts) is lost; storage decides what each fire was."""
        for routine_id, state in list(self.cores.items()):
            fires = tuple(attrs.evolve(f, attempts=0) for f in state.fires)
            self.cores[routine_id] = Core(state.routine_id, state.state, state.revision,
                                          state.schedule, state.next_fire_ms, fires)  # fmt: skip
            evidence = {
                f.fire_id: f"turn_{f.fire_id}" for f in fires if with_receipt and f.session_id
            }
            self.apply(routine_id, Recover(evidence))

    @invariant()
    def at_most_one_record_per_slot(self) -> None:
        assert all(count == 1 for count in self.first_records.values())
        by_slot: dict[tuple[str, int], set[str]] = defaultdict(set)
        for fire_id, slot in self.slot_of.items():
            by_slot[slot].add(fire_id)
            assert fire_id == cron_fire_id(*slot)
        assert all(len(ids) == 1 for ids in by_slot.values())

    @invariant()
    def every_slot_is_accounted_for(self) -> None:
        recorded: dict[str, set[int]] = defaultdict(set)
        for routine_id, slot in self.slot_of.values():
            recorded[routine_id].add(slot)
        for routine_id, spans in self.spans.items():
            exempt = self.omitted[routine_id]  # a long outage records only the newest slots
            schedule = self.cores[routine_id].schedule
            for begin, covered in spans:
                at = schedule.next_after(begin)
                while at is not None and at <= covered:
                    if not any(lo <= at < hi for lo, hi in exempt):
                        assert at in recorded[routine_id], (routine_id, at)
                    at = schedule.next_after(at)

    @invariant()
    def fires_move_only_forward(self) -> None:
        for states in self.history.values():
            assert all(s is FireState.LAUNCHING for s in states[:-1])

    @invariant()
    def at_most_one_unsettled_fire_and_next_fire_while_active(self) -> None:
        for state in self.cores.values():
            assert sum(f.unsettled for f in state.fires) <= 1
            assert (state.next_fire_ms is not None) == (state.state is RoutineState.ACTIVE)


TestRoutineMachine = RoutineMachine.TestCase
TestRoutineMachine.settings = settings(max_examples=60, stateful_step_count=40, deadline=None)
