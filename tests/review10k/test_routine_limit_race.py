"""Two routine.create confirms racing for the 20th place of a Project: the limit is judged
in the write that inserts the routine, so only one wins (both were inserted before: the
count was read outside the transaction, and 21 live routines stood in the Project)."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import trio

from maia.core import MaiaError
from maia.service import ServiceContext
from storage._writer import Outside

from ..maia.service.test_routines import call, create, create_body, project, proof_of

BOUND_S = 60


async def test_racing_confirms_never_exceed_twenty_live_routines(
    rctx: ServiceContext, tmp_path: Path
) -> None:
    """19 live routines, two previews for the 20th place, both confirms past their reads
    while the writer is held: one is created, the other is routine_limit_reached, and the
    Project keeps 20 live routines."""
    project_id = await project(rctx, tmp_path)
    for i in range(19):
        await create(rctx, project_id, f"k{i}")
    bodies = [create_body(project_id, f"race{i}") for i in range(2)]
    confirms = [
        {**body, **proof_of(await call(rctx, "routine.create.preview", body))} for body in bodies
    ]
    held, release = threading.Event(), threading.Event()

    def hold_the_writer(_: Any) -> None:
        held.set()
        release.wait(BOUND_S)

    outcomes: list[Any] = []

    async def confirm(body: dict[str, Any]) -> None:
        try:
            outcomes.append(await call(rctx, "routine.create.confirm", body))
        except MaiaError as error:
            outcomes.append(error)

    with trio.fail_after(BOUND_S):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(rctx.store.write, Outside(hold_the_writer))
            await trio.to_thread.run_sync(held.wait, BOUND_S)
            for body in confirms:
                nursery.start_soon(confirm, body)
            # both confirms have read the count (19) and wait for the writer
            while rctx.store.statistics().mailbox_depth < 3:  # noqa: ASYNC110 (a snapshot)
                await trio.sleep(0.01)
            release.set()
    errors = [o for o in outcomes if isinstance(o, MaiaError)]
    assert [e.code for e in errors] == ["routine_limit_reached"]
    assert errors[0].details["limit"] == 20
    live = await rctx.read(lambda c: c.execute(
        "SELECT count(*) FROM routines WHERE project_id = ? AND state != 'disabled'",
        (project_id,)).fetchone()[0])  # fmt: skip
    assert live == 20
