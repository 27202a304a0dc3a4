"""routine.show read each failed fire's first turn with turn_view: the turn's row, its error
item and every message item (up to 256 KiB of output it does not show), three queries a
failed fire, 60 for a page of 20. It now reads the failures of the page in one query, the
error text cut at 4,096 characters as turn.show cuts it. Real storage, real echo workers
(their turns fail: '/tool nope', no tool host), the real clock shifted."""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import pytest

from maia.service import ServiceContext
from maia.service._turns import turn_show

from ..maia.service._helpers import params
from ..maia.service.test_routine_fires import call, make_routine, wait_for
from ..maia.service.test_routine_fires import fctx as fctx
from ..review10k.test_routine_fire_failures import run_once, settled

T = TypeVar("T")


async def _show_statements(ctx: ServiceContext, monkeypatch: pytest.MonkeyPatch,
                           routine_id: str) -> tuple[Any, list[str]]:  # fmt: skip
    """routine.show through its handler, and every statement its reads ran."""
    statements: list[str] = []
    read = ctx.store.read

    async def traced(fn: Callable[[sqlite3.Connection], T]) -> T:
        def run(conn: sqlite3.Connection) -> T:
            conn.set_trace_callback(statements.append)
            try:
                return fn(conn)
            finally:
                conn.set_trace_callback(None)

        return await read(run)

    with monkeypatch.context() as patch:
        patch.setattr(ctx.store, "read", traced)
        shown = await call(ctx, "routine.show", {"routineId": routine_id})
    return shown, statements


async def test_show_reads_the_failures_of_its_fires_in_one_query(
    fctx: ServiceContext, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    routine_id = await make_routine(fctx, tmp_path, cron="0 0 1 1 *", prompt="/tool nope hi")
    counts = []
    for index in range(3):
        await run_once(fctx, routine_id, f"run{index}")
        await wait_for(fctx, routine_id, lambda shown: settled(shown) and all(
            f.turn_state == "failed" for f in shown.fires))  # fmt: skip
        shown, statements = await _show_statements(fctx, monkeypatch, routine_id)
        assert len(shown.fires) == index + 1
        counts.append(len(statements))
    assert counts[0] == counts[-1] <= 4, counts  # one query whatever the number of fires
    for fire in shown.fires:  # still turn.show's own failure
        turn = (await turn_show(fctx, params("turn.show", {"turnId": fire.turn_id}))).turn
        assert fire.failure is not None
        assert (fire.failure.code, fire.failure.message) == (turn.failure_reason,
                                                             turn.failure_message)  # fmt: skip
