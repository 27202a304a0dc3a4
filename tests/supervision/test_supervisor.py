"""Supervisor trees under trio's MockClock: strategies, intensity, backoff, shutdown, readiness."""

from __future__ import annotations

import random
from typing import Any

import pytest
import trio
import trio.testing

from maia.core import MaiaError
from supervision import (
    ChildContext,
    ChildSpec,
    ChildStartFailed,
    RestartPolicy,
    RestartType,
    Strategy,
    Supervisor,
    SupervisorGaveUp,
)

NO_JITTER = RestartPolicy(intensity=10, period_ms=10_000, backoff_initial_ms=100, jitter=0.0)


class Harness:
    """Children that log their starts and stops and fail or exit when told."""

    def __init__(self) -> None:
        self.log: list[tuple[str, str, float]] = []
        self.outcome: dict[str, trio.Event] = {}
        self.kind: dict[str, str] = {}

    def spec(
        self, name: str, restart: RestartType = RestartType.PERMANENT, **kwargs: Any
    ) -> ChildSpec:
        async def child(ctx: ChildContext, *, task_status: trio.TaskStatus[None]) -> None:
            self.log.append(("start", name, trio.current_time()))
            event = self.outcome[name] = trio.Event()
            task_status.started()
            try:
                await event.wait()
                if self.kind[name] == "fail":
                    raise RuntimeError(f"{name} failed")
            finally:
                self.log.append(("stop", name, trio.current_time()))

        return ChildSpec(name, child, restart, **kwargs)

    def fail(self, name: str, kind: str = "fail") -> None:
        self.kind[name] = kind
        self.outcome[name].set()

    def events(self, since: int = 0) -> list[tuple[str, str]]:
        return [(what, name) for what, name, _ in self.log[since:]]


async def started(nursery: trio.Nursery, sup: Supervisor) -> None:
    await nursery.start(sup.serve)


@pytest.mark.parametrize(
    ("strategy", "expected"),
    [
        (Strategy.ONE_FOR_ONE, [("stop", "b"), ("start", "b")]),
        (
            Strategy.ONE_FOR_ALL,
            [
                ("stop", "b"),
                ("stop", "c"),
                ("stop", "a"),
                ("start", "a"),
                ("start", "b"),
                ("start", "c"),
            ],
        ),
        (Strategy.REST_FOR_ONE, [("stop", "b"), ("stop", "c"), ("start", "b"), ("start", "c")]),
    ],
)
async def test_strategies(
    autojump_clock: trio.testing.MockClock, strategy: Strategy, expected: list[tuple[str, str]]
) -> None:
    """A failing middle child restarts itself, everyone, or itself and those after it."""
    h = Harness()
    sup = Supervisor("s", [h.spec("a"), h.spec("b"), h.spec("c")], strategy=strategy,
                     policy=NO_JITTER)  # fmt: skip
    async with trio.open_nursery() as nursery:
        await started(nursery, sup)
        assert h.events() == [("start", "a"), ("start", "b"), ("start", "c")]
        mark = len(h.log)
        h.fail("b")
        await trio.sleep(1)
        assert h.events(mark) == expected
        assert all(c.running for c in sup.statistics().children)
        nursery.cancel_scope.cancel()
    assert sup.statistics().state == "stopped"


async def test_restart_types(autojump_clock: trio.testing.MockClock) -> None:
    """Transient restarts only after a failure; temporary never; both are then removed."""
    h = Harness()
    children = [h.spec("p"), h.spec("t", RestartType.TRANSIENT), h.spec("x", RestartType.TEMPORARY)]
    sup = Supervisor("s", children, policy=NO_JITTER)
    async with trio.open_nursery() as nursery:
        await started(nursery, sup)
        mark = len(h.log)
        h.fail("t")  # failure: restarted
        await trio.sleep(1)
        assert h.events(mark) == [("stop", "t"), ("start", "t")]
        mark = len(h.log)
        h.fail("t", "exit")  # normal exit: removed
        h.fail("x")  # temporary: removed even on failure
        h.fail("p", "exit")  # permanent: restarted even after a normal exit
        await trio.sleep(1)
        assert sorted(h.events(mark)) == sorted(
            [("stop", "t"), ("stop", "x"), ("stop", "p"), ("start", "p")]
        )
        assert [c.name for c in sup.statistics().children] == ["p"]
        nursery.cancel_scope.cancel()


async def test_intensity_gives_up_and_escalates(autojump_clock: trio.testing.MockClock) -> None:
    """More than N restarts in P: the child supervisor stops all and its parent restarts it."""
    h = Harness()
    inner_policy = RestartPolicy(intensity=2, period_ms=5_000, backoff_initial_ms=10, jitter=0)
    inners: list[Supervisor] = []

    async def inner(ctx: ChildContext, *, task_status: trio.TaskStatus[None]) -> None:
        sup = Supervisor("inner", [h.spec("a"), h.spec("b")], policy=inner_policy)
        inners.append(sup)
        await sup.serve(task_status=task_status)

    outer = Supervisor("outer", [ChildSpec("inner", inner)], policy=NO_JITTER)
    async with trio.open_nursery() as nursery:
        await started(nursery, outer)
        for _ in range(2):
            h.fail("a")
            await trio.sleep(0.5)
        assert len(inners) == 1
        mark = len(h.log)
        h.fail("a")  # the third restart within 5 s: inner gives up
        await trio.sleep(0.5)
        assert h.events(mark) == [("stop", "a"), ("stop", "b"), ("start", "a"), ("start", "b")]
        assert inners[0].statistics().state == "gave_up"
        assert len(inners) == 2
        assert outer.statistics().children[0].restarts == 1
        nursery.cancel_scope.cancel()


async def test_top_supervisor_gives_up_raises(autojump_clock: trio.testing.MockClock) -> None:
    """A supervisor past its intensity raises SupervisorGaveUp after stopping its children."""
    h = Harness()
    sup = Supervisor("s", [h.spec("a"), h.spec("b")],
                     policy=RestartPolicy(intensity=0, jitter=0))  # fmt: skip
    with pytest.RaisesGroup(pytest.RaisesExc(SupervisorGaveUp, match="1 restarts within")):
        async with trio.open_nursery() as nursery:
            await started(nursery, sup)
            h.fail("a")
    assert h.events()[-2:] == [("stop", "a"), ("stop", "b")]


async def test_backoff_timings_and_stable_reset(autojump_clock: trio.testing.MockClock) -> None:
    """Consecutive failures wait 100, 200, 400 ms; after a stable run the wait is 100 again."""
    h = Harness()
    policy = RestartPolicy(intensity=100, period_ms=1_000, backoff_initial_ms=100, jitter=0,
                           stable_ms=10_000)  # fmt: skip
    sup = Supervisor("s", [h.spec("a")], policy=policy)
    delays: list[float] = []
    async with trio.open_nursery() as nursery:
        await started(nursery, sup)
        for _ in range(3):
            failed_at = trio.current_time()
            h.fail("a")
            await trio.testing.wait_all_tasks_blocked()
            assert sup.statistics().children[0].backoff_ms == 100 * 2 ** len(delays)
            await trio.sleep(5)
            delays.append(round(h.log[-1][2] - failed_at, 3))
        await trio.sleep(10)  # a stable run
        failed_at = trio.current_time()
        h.fail("a")
        await trio.sleep(5)
        delays.append(round(h.log[-1][2] - failed_at, 3))
        nursery.cancel_scope.cancel()
    assert delays == [0.1, 0.2, 0.4, 0.1]


async def test_backoff_jitter_in_bounds(autojump_clock: trio.testing.MockClock) -> None:
    """With jitter 0.5 each delay lies within ±50% of its exponential step."""
    h = Harness()
    policy = RestartPolicy(intensity=100, backoff_initial_ms=1_000, jitter=0.5, stable_ms=10**9)
    sup = Supervisor("s", [h.spec("a")], policy=policy, rng=random.Random(7))
    async with trio.open_nursery() as nursery:
        await started(nursery, sup)
        for step in range(4):
            failed_at = trio.current_time()
            h.fail("a")
            await trio.sleep(60)
            delay = h.log[-1][2] - failed_at
            base = 2**step
            assert base * 0.5 <= delay <= base * 1.5
        nursery.cancel_scope.cancel()


async def test_shutdown_reverse_order_and_timeouts(autojump_clock: trio.testing.MockClock) -> None:
    """Stop goes last-started first; a graceful child gets its grace, an overstayer is cancelled."""
    log: list[tuple[str, float]] = []

    def graceful(name: str, cleanup_s: float) -> Any:
        async def child(ctx: ChildContext, *, task_status: trio.TaskStatus[None]) -> None:
            task_status.started()
            try:
                await ctx.stop_requested.wait()
                log.append((f"{name} asked", trio.current_time()))
                await trio.sleep(cleanup_s)
                log.append((f"{name} clean", trio.current_time()))
            finally:
                log.append((f"{name} gone", trio.current_time()))

        return child

    specs = [
        ChildSpec("a", graceful("a", 0.5), shutdown_ms=2_000),
        ChildSpec("b", graceful("b", 10.0), shutdown_ms=1_000),
        ChildSpec("c", graceful("c", 3.0)),  # shutdown_ms 0: cancelled at once
    ]
    sup = Supervisor("s", specs)
    async with trio.open_nursery() as nursery:
        await started(nursery, sup)
        t0 = trio.current_time()
        nursery.cancel_scope.cancel()
    got = [(what, round(at - t0, 3)) for what, at in log]
    assert got == [
        ("c asked", 0.0), ("c gone", 0.0),
        ("b asked", 0.0), ("b gone", 1.0),
        ("a asked", 1.0), ("a clean", 1.5), ("a gone", 1.5),
    ]  # fmt: skip
    assert sup.statistics().killed == 1


async def test_readiness(autojump_clock: trio.testing.MockClock) -> None:
    """`nursery.start(sup.serve)` returns once every child called task_status.started()."""

    async def slow(ctx: ChildContext, *, task_status: trio.TaskStatus[None]) -> None:
        await trio.sleep(2)
        task_status.started()
        await trio.sleep_forever()

    sup = Supervisor("s", [ChildSpec("a", slow), ChildSpec("b", slow)])
    async with trio.open_nursery() as nursery:
        t0 = trio.current_time()
        await nursery.start(sup.serve)
        assert trio.current_time() - t0 == pytest.approx(4.0)
        assert sup.statistics().state == "running"
        nursery.cancel_scope.cancel()


async def test_start_failure_and_ready_timeout(autojump_clock: trio.testing.MockClock) -> None:
    """An initial child failing or never getting ready fails the supervisor's start."""

    async def broken(ctx: ChildContext, *, task_status: trio.TaskStatus[None]) -> None:
        raise RuntimeError("no")

    async def mute(ctx: ChildContext, *, task_status: trio.TaskStatus[None]) -> None:
        await trio.sleep_forever()

    for spec in (ChildSpec("x", broken), ChildSpec("y", mute, ready_timeout_ms=3_000)):
        sup = Supervisor("s", [spec])
        with pytest.RaisesGroup(ChildStartFailed):
            async with trio.open_nursery() as nursery:
                await nursery.start(sup.serve)
        assert sup.statistics().state == "gave_up"


async def test_dynamic_children(autojump_clock: trio.testing.MockClock) -> None:
    """Dynamic: children added at run time restart alone; limits and duplicates are refused."""
    h = Harness()
    sup = Supervisor("d", strategy=Strategy.DYNAMIC, policy=NO_JITTER, max_children=3)
    async with trio.open_nursery() as nursery:
        await started(nursery, sup)
        for name in ("w1", "w2"):
            await sup.start_child(h.spec(name))
        await sup.start_child(h.spec("w3", RestartType.TEMPORARY))
        with pytest.raises(MaiaError) as info:
            await sup.start_child(h.spec("w4"))
        assert info.value.code == "saturated"
        with pytest.raises(MaiaError) as info:
            await sup.start_child(h.spec("w1"))
        assert info.value.code == "invalid_request"
        mark = len(h.log)
        h.fail("w2")
        h.fail("w3")
        await trio.sleep(1)
        assert sorted(h.events(mark)) == [("start", "w2"), ("stop", "w2"), ("stop", "w3")]
        stats = sup.statistics()
        assert [(c.name, c.restarts) for c in stats.children] == [("w1", 0), ("w2", 1)]
        nursery.cancel_scope.cancel()
    assert sorted(h.events()[-2:]) == [("stop", "w1"), ("stop", "w2")]
    with pytest.raises(MaiaError) as info:
        await sup.start_child(h.spec("late"))
    assert info.value.code == "unavailable"
