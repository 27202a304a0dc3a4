"""docs/machines.md's walkthrough on loopback, two real Nodes: enroll, place a Session, a
turn answered at Control; then step 5 (revoke) and a turn sent to that Session afterwards.
The page covers a turn that was running at the revoke (it stays running, outcome unknown);
a turn sent after it never reaches box, so it ends `failed`, `runtime_lost`, never started
(its fault table), and the Session then stops (both failed before: `dispatching` and
`stopping` for good)."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.machines._nodes import NodeProc, enrolled_pair, link_of, wait_for

ENDED = {"completed", "failed", "interrupted"}
SETTLE_S = 20.0


@pytest.fixture
def placed(tmp_path: Path) -> Iterator[tuple[NodeProc, str]]:
    """Control with a machine listener, `box` enrolled and connected, a Session placed on
    it that answered one turn (its worker warm on box)."""
    with enrolled_pair(tmp_path, execution_dir="box") as (control, _, project_id):
        created = control.call("session", "create", "--project-id", project_id,
                               "--machine", "box", "--title", "remote")  # fmt: skip
        session_id = created["session"]["sessionId"]
        sent = control.maia("turn", "send", session_id, "hello", "--wait", "--timeout", "60s")
        assert sent.stdout == "hello\n"
        yield control, session_id


def _state(control: NodeProc, turn_id: str) -> str:
    state: str = control.call("turn", "show", turn_id)["turn"]["state"]
    return state


def test_a_turn_sent_after_the_revoke_ends(placed: tuple[NodeProc, str]) -> None:
    """After `machine revoke` (the link seen closed), a sent turn ends within 20 s of an
    interrupt: refused, failed or interrupted, never dispatching for good."""
    control, session_id = placed
    control.maia("machine", "revoke", "--name", "box", "--yes")
    wait_for(lambda: not link_of(control, "box").get("connected", False),
             "the revoked link stayed connected", control)  # fmt: skip
    sent = control.maia("turn", "send", session_id, "after revoke", "--json", check=False)
    if sent.returncode != 0:
        return  # refused at the send: that also ends it
    turn_id = json.loads(sent.stdout)["result"]["turn"]["turnId"]
    control.maia("turn", "interrupt", turn_id, check=False)
    deadline = time.monotonic() + SETTLE_S
    while time.monotonic() < deadline and _state(control, turn_id) not in ENDED:
        time.sleep(0.5)
    turn = control.call("turn", "show", turn_id)["turn"]
    assert (turn["state"], turn.get("failureReason")) == ("failed", "runtime_lost"), turn
    assert turn.get("startedAt") is None, turn  # nothing ran: it never started


def test_a_session_on_a_revoked_machine_stops(placed: tuple[NodeProc, str]) -> None:
    """After the revoke and a turn that could not reach box, `session stop` ends `stopped`
    (the Session's worker is counted gone), not `stopping` for good."""
    control, session_id = placed
    control.maia("machine", "revoke", "--name", "box", "--yes")
    wait_for(lambda: not link_of(control, "box").get("connected", False),
             "the revoked link stayed connected", control)  # fmt: skip
    control.maia("turn", "send", session_id, "after revoke", "--wait", "--timeout", "30s",
                 check=False)  # fmt: skip
    control.maia("session", "stop", session_id, check=False)
    deadline = time.monotonic() + SETTLE_S
    state = ""
    while time.monotonic() < deadline:
        state = control.call("session", "show", session_id)["session"]["state"]
        if state == "stopped":
            break
        time.sleep(0.5)
    assert state == "stopped"
