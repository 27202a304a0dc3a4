"""An actor's effects run in one nursery of its own (its host task, opened at the first
effect), not each in a cancel scope of its own, and keep what the scopes gave: `close`
cancels every running effect, an effect started before the host task ran and closed before
it ran still starts cancelled (it runs to its first checkpoint only), effects started after
`close` do nothing, `live` and the actor's vetoes count the running ones, and a failing
effect crashes its actor alone."""

from __future__ import annotations

import trio
import trio.testing

from actors import Actor, EffectScope


def _actor() -> Actor[int, int]:
    async def handler(message: int) -> int:
        return message

    return Actor("a", handler)


async def test_close_cancels_every_running_effect(autojump_clock: trio.testing.MockClock) -> None:
    actor = _actor()
    events: list[str] = []

    async def effect(name: str) -> None:
        events.append(f"{name} started")
        try:
            await trio.sleep_forever()
        finally:
            events.append(f"{name} cancelled")

    async with trio.open_nursery() as nursery:
        scope = EffectScope(actor, nursery)
        scope.start("one", lambda: effect("one"))
        scope.start("two", lambda: effect("two"))  # queued until the host task runs
        await trio.testing.wait_all_tasks_blocked()
        scope.start("three", lambda: effect("three"))  # into the host's nursery
        await trio.testing.wait_all_tasks_blocked()
        assert scope.live == 3
        assert actor.vetoes == 3
        scope.close()
        scope.start("late", lambda: effect("late"))  # a no-op once closed
    assert sorted(events) == sorted(
        f"{n} {w}" for n in ("one", "two", "three") for w in ("started", "cancelled")
    )
    assert scope.live == 0
    assert actor.vetoes == 0


async def test_finished_effects_leave_the_count_and_the_host_stays(
    autojump_clock: trio.testing.MockClock,
) -> None:
    actor = _actor()
    done: list[int] = []

    async def effect(value: int) -> None:
        await trio.sleep(1.0)
        done.append(value)

    async with trio.open_nursery() as nursery:
        scope = EffectScope(actor, nursery)
        for value in range(3):
            scope.start("e", lambda value=value: effect(value))  # type: ignore[misc]
            await trio.sleep(2.0)
            assert scope.live == 0
            assert actor.vetoes == 0
        assert done == [0, 1, 2]
        scope.close()  # the host task ends: the nursery can exit


async def test_closed_before_the_host_ran_the_effect_starts_cancelled(
    autojump_clock: trio.testing.MockClock,
) -> None:
    actor = _actor()
    reached: list[str] = []

    async def effect() -> None:
        reached.append("before the first checkpoint")
        await trio.sleep(1.0)
        reached.append("after it")

    async with trio.open_nursery() as nursery:
        scope = EffectScope(actor, nursery)
        scope.start("e", effect)
        scope.close()
    assert reached == ["before the first checkpoint"]
    assert scope.live == 0
    assert actor.vetoes == 0


async def test_a_failing_effect_crashes_its_actor_and_not_the_others(
    autojump_clock: trio.testing.MockClock,
) -> None:
    actor = _actor()
    finished: list[str] = []

    async def failing() -> None:
        await trio.sleep(1.0)
        raise RuntimeError("a bug")

    async def steady() -> None:
        await trio.sleep(2.0)
        finished.append("steady")

    async with trio.open_nursery() as nursery:
        scope = EffectScope(actor, nursery)
        scope.start("failing", failing)
        scope.start("steady", steady)
        await trio.sleep(3.0)
        scope.close()
    assert actor._crash is not None  # serve would raise EffectFailed after the message in hand
    name, error = actor._crash
    assert (name, str(error)) == ("failing", "a bug")
    assert finished == ["steady"]
