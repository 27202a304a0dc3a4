"""s7-review5: turn.interrupt and turn.cancel racing short turns' ends through a real Node
(loopback API, echo worker processes): each answer is the new turn or a typed refusal
(invalid_state, turn_not_queued), every turn ends, and each row and its journal keep the
spec's turn transitions; turn.wait's turn is turn.show's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trio

from maia.client import open_client
from maia.core import MaiaError, new_id
from maia.node import NodeConfig, NodeHome, serve_node

from .test_deferred_real_node import _ENDED, _check, _send, _session, _wait

_REFUSED = {"invalid_state", "turn_not_queued", "revision_conflict"}


async def _race(client: Any, op: str, turn_id: str, answers: list[str]) -> None:
    wire: dict[str, Any] = {"commandId": new_id("command"), "turnId": turn_id}
    if op == "turn.cancel":
        wire["expectedRevision"] = 1  # as queued
    try:
        await client.request(op, wire)
    except MaiaError as error:
        answers.append(error.code)
    else:
        answers.append("ok")


async def test_interrupts_and_cancels_racing_short_turns(tmp_path: Path) -> None:
    """Short turns each raced by an interrupt (or a cancel): typed answers, rows per spec."""
    home = NodeHome(tmp_path / "home")
    (tmp_path / "project").mkdir()
    root = str((tmp_path / "project").resolve())
    answers: list[str] = []
    async with trio.open_nursery() as nursery:
        await nursery.start(serve_node, NodeConfig(home))
        async with open_client(home=home.root) as client:
            session = await _session(client, root, "race")
            turns = []
            for n in range(12):
                text = "/sleep 3 r" if n % 3 else f"short {n}"
                turn_id = await _send(client, session, text)
                if n % 2:  # raced with its end (or its start's flush), not its queue
                    await _wait(client, turn_id, ("running", *_ENDED))
                async with trio.open_nursery() as racers:  # both while the turn may end
                    racers.start_soon(_race, client, "turn.interrupt", turn_id, answers)
                    if n % 4 == 0:
                        racers.start_soon(_race, client, "turn.cancel", turn_id, answers)
                turns.append(turn_id)
            views = {}
            for turn_id in turns:
                ended = await _wait(client, turn_id, _ENDED)
                shown = (await client.request("turn.show", {"turnId": turn_id}))["turn"]
                assert ended == shown
                views[turn_id] = shown
        nursery.cancel_scope.cancel()
    for turn_id in turns:
        _check(home.database_path, turn_id, views[turn_id])
    assert len(answers) == 12 + 3
    assert set(answers) <= {"ok", *_REFUSED}, answers
