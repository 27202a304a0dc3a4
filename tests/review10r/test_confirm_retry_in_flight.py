"""A routine.create confirm retried while the first is still in flight (the client's reply
was slow, it sent the same commandId again): the retry must get the first one's result,
`duplicate` (docs/routines.md: a retry answers its stored result before any check). The
retry's receipt look-up runs before the first commits, its later checks after: held there
by a wrapper around the executor check (the only fake; real storage, real handlers)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio

from maia.core import MaiaError
from maia.service import ServiceContext, _routines

from ..maia.service.test_routines import call, create, create_body, project, proof_of

BOUND_S = 60


async def _retry_overtaken(rctx: ServiceContext, monkeypatch: pytest.MonkeyPatch,
                           body: dict[str, Any]) -> list[Any]:  # fmt: skip
    """[the first confirm's answer, the retry's]: the retry passes its replay look-up, then
    waits (in the executor check) until the first has committed and answered."""
    checked = _routines._checked_executor
    first_done = trio.Event()
    calls = 0

    async def held_executor_check(ctx: ServiceContext, template: Any) -> None:
        nonlocal calls
        calls += 1
        if calls == 1:  # the retry, which looked its receipt up before the first committed
            await first_done.wait()
        await checked(ctx, template)

    monkeypatch.setattr(_routines, "_checked_executor", held_executor_check)
    answers: list[Any] = [None, None]

    async def confirm(index: int) -> None:
        try:
            answers[index] = await call(rctx, "routine.create.confirm", body)
        except MaiaError as error:
            answers[index] = error
        if index == 0:
            first_done.set()

    with trio.fail_after(BOUND_S):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(confirm, 1)
            while calls < 1:  # noqa: ASYNC110 (the retry reached its hold)
                await trio.sleep(0.01)
            nursery.start_soon(confirm, 0)
    return answers


async def test_a_retry_overtaken_by_its_first_confirm_is_a_duplicate(
    rctx: ServiceContext, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With room in the Project: the first creates, the retry answers duplicate."""
    project_id = await project(rctx, tmp_path)
    body = create_body(project_id, "only")
    body = {**body, **proof_of(await call(rctx, "routine.create.preview", body))}
    first, retry = await _retry_overtaken(rctx, monkeypatch, body)
    assert first.delivery == "new"
    assert not isinstance(retry, MaiaError), retry
    assert (retry.delivery, retry.routine.routine_id) == ("duplicate", first.routine.routine_id)


async def test_a_retry_of_the_twentieth_routine_overtaken_by_its_first_is_a_duplicate(
    rctx: ServiceContext, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """19 live routines: the first confirm makes the 20th; its retry answers duplicate
    (it was routine_limit_reached: the room was judged after the first had filled it)."""
    project_id = await project(rctx, tmp_path)
    for index in range(19):
        await create(rctx, project_id, f"k{index}")
    body = create_body(project_id, "twentieth")
    body = {**body, **proof_of(await call(rctx, "routine.create.preview", body))}
    first, retry = await _retry_overtaken(rctx, monkeypatch, body)
    assert first.delivery == "new"
    assert not isinstance(retry, MaiaError), retry
    assert (retry.delivery, retry.routine.routine_id) == ("duplicate", first.routine.routine_id)
