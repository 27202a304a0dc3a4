"""s7-review5: SIGKILL of a real Node while short turns (each start written with its end's
commit) and slow ones (the start committed alone, the end later) stream through a Session,
three times at different points, then a restart: every turn ends, and each row and its
journal keep the spec's turn transitions (revisions 1.. gap-free, the row at its last event,
started_ms exactly when turn.started was journaled, never after finished_ms)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from maia.client import open_client

from .._node_process import NodeProcess, running_node
from .._sessions import new_session, wait_turn
from .test_deferred_real_node import _check

CONFIG = """{
  "executors": {"echo": {"kind": "echo"}},
}
"""


@pytest.fixture
def node(tmp_path: Path) -> Iterator[NodeProcess]:
    with running_node(tmp_path, CONFIG, {}) as process:
        yield process


async def test_kill_9_amid_deferred_starts_leaves_rows_the_spec_allows(
    node: NodeProcess, tmp_path: Path
) -> None:
    """Three SIGKILLs amid short and slow turns; after restarts each row fits its journal."""
    async with open_client(home=node.home) as client:
        session_id = await new_session(client, tmp_path / "proj", "kill9")
    turns: list[str] = []
    # what each round waits for before its SIGKILL: nothing, the slow turn running (its
    # start committed alone, its end not), the first short turn ended
    for round_no, (index, states) in enumerate(((None, ()), (2, ("running",)),
                                                (0, ("completed", "failed")))):  # fmt: skip
        async with open_client(home=node.home) as client:
            sent = []
            for n in range(6):  # short turns with a slow one among them
                text = f"/sleep 3000 slow {round_no}" if n == 2 else f"short {round_no}.{n}"
                answer = await client.call("turn.send", command_id=f"k{round_no}-{n}",
                                           session_id=session_id, text=text)  # fmt: skip
                sent.append(answer.turn.turn_id)
            if index is not None:
                await wait_turn(client, sent[index], *states)
        node.kill()  # between some start's commit and its end's, or amid one end commit
        node.start()
        turns += sent
        async with open_client(home=node.home) as client:  # recovered: each ends
            for turn_id in sent:
                await wait_turn(client, turn_id, "completed", "failed", "interrupted")
    async with open_client(home=node.home) as client:
        views = {}
        for turn_id in turns:
            ended = await wait_turn(client, turn_id, "completed", "failed", "interrupted")
            shown = await client.call("turn.show", turn_id=turn_id)
            assert ended.state == shown.turn.state
            views[turn_id] = {"state": shown.turn.state, "revision": shown.turn.revision}
        with trio.fail_after(60):
            show = await client.call("session.show", session_id=session_id)
    node.stop()
    kinds = [_check(node.home / "maia.db", turn_id, views[turn_id]) for turn_id in turns]
    assert all(k[0] == "turn.queued" for k in kinds)
    assert show.session.session_id == session_id
