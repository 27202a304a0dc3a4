"""A durable timer whose handler refuses it (review8c D4/D5: the write of a routine slot's
claim or a webhook's attempt failing while the disk is full): a retryable refusal fires it
again `RETRY_MS` later, until it is handled, then once; any other refusal is the actor's
decision and is not fired again. The lamp kind on real storage under virtual time."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio
import trio.testing

from actors._timers import RETRY_MS
from maia.protocol import MaiaError

from ._lamp import LampCore, Remind, lamp_kind
from .test_kind import CLOCK, create, node, rows

REMINDED = "SELECT payload FROM events WHERE event_type = 'lamp.reminded'"


@pytest.fixture
def jump_clock() -> trio.testing.MockClock:
    """Virtual time that only the test moves: no autojump; `node` drives it while quiet."""
    return trio.testing.MockClock()


def _unavailable() -> MaiaError:
    return MaiaError("unavailable", "storage is unavailable: disk full", {"target": "storage"})


async def test_a_timer_refused_unavailable_fires_again_until_it_is_handled(
    tmp_path: Path, jump_clock: trio.testing.MockClock
) -> None:
    """Refused `unavailable` twice: handled once, RETRY_MS after the second refusal, and its
    row is gone."""
    db = tmp_path / "maia.db"
    core = LampCore()
    async with node(db, core) as runtime:
        lamp = await create(runtime, core)
        due = CLOCK.wall_ms() + 5_000
        core.refusals = [_unavailable(), _unavailable()]
        assert await runtime[lamp_kind(core)].ask(lamp, Remind(due)) == "armed"
        await trio.sleep(5 + 30)
        assert core.refusals == []
        assert rows(db, REMINDED) == [(f'{{"at":{due + 2 * RETRY_MS}}}',)]
        assert rows(db, "SELECT count(*) FROM actor_timers") == [(0,)]
        assert runtime.timers.armed() == []


async def test_a_timer_refused_for_good_is_not_fired_again(
    tmp_path: Path, jump_clock: trio.testing.MockClock
) -> None:
    """Refused `invalid_state` (not retryable): never handled, not armed again, row gone."""
    db = tmp_path / "maia.db"
    core = LampCore()
    async with node(db, core) as runtime:
        lamp = await create(runtime, core)
        core.refusals = [MaiaError("invalid_state", "lamp is off", {"resource": "lamp"})]
        due = CLOCK.wall_ms() + 5_000
        assert await runtime[lamp_kind(core)].ask(lamp, Remind(due)) == "armed"
        await trio.sleep(5 + 30)
        assert core.refusals == []
        assert rows(db, REMINDED) == []
        assert rows(db, "SELECT count(*) FROM actor_timers") == [(0,)]
        assert runtime.timers.armed() == []
