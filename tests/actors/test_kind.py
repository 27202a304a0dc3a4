"""The kind-facing runtime API end to end on real storage, through the test-only lamp kind:
the one write path, durable timers (across a simulated restart), the recovery column,
effect scopes (a raising effect crashes and restarts its actor, logged with its traceback),
the passivation veto, and the typed errors' wire mapping."""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

import storage
from actors import (
    ActorOverloaded,
    ActorRuntime,
    AskTimedOut,
    Command,
    Fired,
    TrioClock,
    open_actor_runtime,
)
from maia.protocol import MaiaError

from ._lamp import AUTO_OFF_MS, LAMP_DDL, Create, Explode, Hold, LampCore, Remind, Switch, lamp_kind
from ._virtual_time import driven_clock

CLOCK = TrioClock()


@pytest.fixture
def jump_clock() -> trio.testing.MockClock:
    """Virtual time that only the test moves: no autojump; `node` drives it while quiet."""
    return trio.testing.MockClock()


def command(n: int, operation: str = "lamp.switch") -> Command:
    return Command(f"cmd-{n}", "local-user", f"sha256:{n:064d}", operation)


@asynccontextmanager
async def node(path: Path, core: LampCore, **kind: Any) -> AsyncIterator[ActorRuntime]:
    """Storage and an actor runtime with the lamp kind: one 'Node run'."""
    async with storage.open_storage(path, clock=CLOCK) as store:
        await store.write(lambda c: c.execute(LAMP_DDL))
        async with (
            driven_clock(store),
            open_actor_runtime(
                store, clock=CLOCK, config=None, kinds=(lamp_kind(core, **kind),)
            ) as runtime,
        ):
            yield runtime


def rows(path: Path, sql: str, *args: Any) -> list[tuple[Any, ...]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql, args).fetchall()
    finally:
        conn.close()


async def create(runtime: ActorRuntime, core: LampCore, n: int = 1) -> str:
    lamps = runtime[lamp_kind(core)]
    answer = await lamps.ask(f"lamp-{n}", Create(command(n, "lamp.create"), f"lamp {n}"))
    assert answer.delivery == "new"
    return f"lamp-{n}"


async def test_transitions_commit_state_events_and_receipts_together(
    tmp_path: Path, jump_clock: trio.testing.MockClock
) -> None:
    """Creation and switches are table transitions: row, event and receipt in one write;
    a replayed command changes nothing; a refusal writes nothing and keeps memory."""
    db = tmp_path / "maia.db"
    core = LampCore()
    async with node(db, core) as runtime:
        lamps = runtime[lamp_kind(core)]
        lamp = await create(runtime, core)
        on = await lamps.ask(lamp, Switch(command(2), on=True))
        assert on.result["lamp"] == {"id": lamp, "state": "on", "revision": 2}
        again = await lamps.ask(lamp, Switch(command(2), on=True))
        assert again.delivery == "duplicate"
        assert again.receipt == on.receipt
        with pytest.raises(MaiaError) as refused:
            await lamps.ask(lamp, Switch(command(3), on=True))  # already on
        assert refused.value.code == "invalid_state"
        off = await lamps.ask(lamp, Switch(command(4), on=False))
        assert off.result["lamp"]["revision"] == 3
    assert rows(db, "SELECT state, revision FROM lamps") == [("off", 3)]
    events = rows(db, "SELECT event_type, aggregate_revision FROM events ORDER BY position")
    assert events == [("lamp.created", 1), ("lamp.on", 2), ("lamp.off", 3)]
    assert rows(db, "SELECT count(*) FROM receipts") == [(3,)]  # the refusal left none


async def test_a_table_timeout_is_a_state_timer_that_fires_its_event(
    tmp_path: Path, jump_clock: trio.testing.MockClock
) -> None:
    """A row's timeout arms a persisted timer in the transition's write; it applies the
    row's on_timeout event at the deadline, and a transition before it disarms it."""
    db = tmp_path / "maia.db"
    core = LampCore()
    async with node(db, core) as runtime:
        lamps = runtime[lamp_kind(core)]
        lamp = await create(runtime, core)
        await lamps.ask(lamp, Switch(command(2), on=True))
        armed_at = CLOCK.wall_ms()
        assert rows(db, "SELECT name, event FROM actor_timers") == [
            (f"state:{lamp}", "lamp.auto_off")
        ]
        await trio.sleep(AUTO_OFF_MS / 1000 + 1)
        assert rows(db, "SELECT state FROM lamps") == [("off",)]
        off = rows(db, "SELECT occurred_ms FROM events WHERE event_type = 'lamp.off'")
        assert off == [(armed_at + AUTO_OFF_MS,)]
        assert rows(db, "SELECT count(*) FROM actor_timers") == [(0,)]
        await lamps.ask(lamp, Switch(command(3), on=True))
        await lamps.ask(lamp, Switch(command(4), on=False))  # before its deadline
        assert rows(db, "SELECT count(*) FROM actor_timers") == [(0,)]
        await trio.sleep(AUTO_OFF_MS / 1000 + 1)
    assert len(rows(db, "SELECT 1 FROM events WHERE event_type = 'lamp.off'")) == 2


async def test_a_timer_armed_before_a_restart_fires_once_at_its_deadline_after_it(
    tmp_path: Path, jump_clock: trio.testing.MockClock
) -> None:
    """A wake-up armed in one Node run fires once, at its deadline, in the next run (the
    node epoch changed, so its wall deadline decides); one whose deadline passed while the
    Node was down fires at once."""
    db = tmp_path / "maia.db"
    core = LampCore()
    async with node(db, core) as runtime:
        lamp = await create(runtime, core)
        due = CLOCK.wall_ms() + 60_000
        late = CLOCK.wall_ms() + 5_000
        assert await runtime[lamp_kind(core)].ask(lamp, Remind(due)) == "armed"
        await create(runtime, core, 2)
        assert await runtime[lamp_kind(core)].ask("lamp-2", Remind(late)) == "armed"
        await trio.sleep(1)
    jump_clock.jump(10)  # the Node is down past lamp-2's deadline
    async with node(db, core):
        await trio.sleep(1)
        assert rows(db, "SELECT owner_id FROM events WHERE event_type = 'lamp.reminded'") == [
            ("lamp-2",)
        ]
        await trio.sleep((due - CLOCK.wall_ms()) / 1000 + 30)
    reminded = rows(db, "SELECT owner_id, payload FROM events WHERE event_type = 'lamp.reminded'"
                    " ORDER BY position")  # fmt: skip
    assert [r[0] for r in reminded] == ["lamp-2", "lamp-1"]  # each exactly once
    assert reminded[1][1] == f'{{"at":{due}}}'  # at its original deadline
    assert rows(db, "SELECT count(*) FROM actor_timers") == [(0,)]


async def test_the_recovery_column_runs_on_start(
    tmp_path: Path, jump_clock: trio.testing.MockClock
) -> None:
    """A lamp left on by a dead Node is off after the next start, by the table's
    recover_with event (an event in its journal), and its stale state timer is gone."""
    db = tmp_path / "maia.db"
    core = LampCore()
    async with node(db, core, recover=True) as runtime:
        lamp = await create(runtime, core)
        await runtime[lamp_kind(core)].ask(lamp, Switch(command(2), on=True))
    async with node(db, core, recover=True):
        assert rows(db, "SELECT state, revision FROM lamps") == [("off", 3)]
        assert rows(db, "SELECT count(*) FROM actor_timers") == [(0,)]
        await trio.sleep(AUTO_OFF_MS / 1000 + 1)
    assert rows(db, "SELECT event_type FROM events ORDER BY position")[-1] == ("lamp.off",)
    assert len(rows(db, "SELECT 1 FROM events WHERE event_type = 'lamp.off'")) == 1


async def test_a_raising_effect_crashes_its_actor_which_restarts_from_storage(
    tmp_path: Path, jump_clock: trio.testing.MockClock, caplog: pytest.LogCaptureFixture
) -> None:
    """The effect's traceback is logged (maia.actors, the Node's log), the actor restarts
    from storage (told its restart message), and its state is what storage holds."""
    db = tmp_path / "maia.db"
    core = LampCore()
    caplog.set_level(logging.ERROR, logger="maia.actors")
    async with node(db, core) as runtime:
        lamps = runtime[lamp_kind(core)]
        lamp = await create(runtime, core)
        await lamps.ask(lamp, Switch(command(2), on=True))
        await lamps.ask(lamp, Explode())
        await trio.sleep(1)
        stats = lamps.registry.statistics()
        assert (stats.crashed, stats.restarted, core.restarts) == (1, 1, 1)
        off = await lamps.ask(lamp, Switch(command(3), on=False))  # memory came from storage
        assert off.result["lamp"]["revision"] == 3
    crash = [r for r in caplog.records if "crashed" in r.getMessage()]
    assert len(crash) == 1
    assert crash[0].exc_info is not None
    assert "the bulb shattered" in caplog.text  # the effect's own error, in the traceback


async def test_live_effects_veto_passivation(
    tmp_path: Path, jump_clock: trio.testing.MockClock
) -> None:
    """An idle actor holding a live effect is not passivated; once it ends, it is."""
    db = tmp_path / "maia.db"
    core = LampCore()
    async with node(db, core, idle_s=10) as runtime:
        lamps = runtime[lamp_kind(core)]
        lamp = await create(runtime, core)
        release = trio.Event()
        await lamps.ask(lamp, Hold(release))
        await trio.sleep(60)
        assert lamps.registry.is_live(lamp)
        release.set()
        await trio.sleep(60)
        assert not lamps.registry.is_live(lamp)


async def test_timer_fired_for_a_stale_revision_is_ignored(
    tmp_path: Path, jump_clock: trio.testing.MockClock
) -> None:
    """A state timer delivered twice (at-least-once) or after the aggregate moved on is
    dropped by the runtime before the core sees it."""
    db = tmp_path / "maia.db"
    core = LampCore()
    async with node(db, core) as runtime:
        lamps = runtime[lamp_kind(core)]
        lamp = await create(runtime, core)
        assert await lamps.ask(lamp, Fired(f"state:{lamp}", "lamp.auto_off", lamp, 0, 0)) is None
        await lamps.ask(lamp, Switch(command(2), on=True))
        stale = Fired(f"state:{lamp}", "lamp.auto_off", lamp, 1, 0)
        assert await lamps.ask(lamp, stale) is None  # armed at revision 1, lamp is at 2
    assert rows(db, "SELECT state FROM lamps") == [("on",)]


def test_runtime_errors_map_to_wire_errors_once() -> None:
    """The typed runtime errors carry the wire code and details the API promises."""
    overloaded = ActorOverloaded("lamp/x").to_wire()
    assert (overloaded.code, overloaded.details) == ("overloaded", {"target": "lamp/x"})
    late = AskTimedOut("lamp/x", 4500).to_wire()
    assert late.code == "deadline_exceeded"
    assert late.details["ms"] == 4500
    assert not isinstance(ActorOverloaded("x"), MaiaError)


async def test_a_kind_is_reached_by_its_declaration_and_registered_once(
    tmp_path: Path, jump_clock: trio.testing.MockClock
) -> None:
    """`runtime[KIND]` is the kind's facade; a kind not running is `unavailable`; a kind
    registered twice is refused."""
    core = LampCore()
    async with storage.open_storage(tmp_path / "maia.db", clock=CLOCK) as store:
        async with open_actor_runtime(store, clock=CLOCK, config=None, kinds=()) as runtime:
            with pytest.raises(MaiaError) as info:
                runtime[lamp_kind(core)]
            assert info.value.code == "unavailable"
        kinds = (lamp_kind(core), lamp_kind(core))
        with pytest.raises(ValueError, match="twice"):
            await open_actor_runtime(store, clock=CLOCK, config=None, kinds=kinds).__aenter__()
