"""docs/machines.md's walkthrough on loopback, two real Nodes: enroll, place a Session, a
turn answered at Control; then step 5 (revoke) and a turn sent to that Session afterwards.
The page covers a turn that was running at the revoke (it stays running, outcome unknown);
a turn sent after it was never delivered, and docs/sessions.md promises that interrupting a
dispatching turn waits at most 3 s for its start, then interrupts it."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.machines._nodes import NodeProc, enroll, link_of, stop_pair, wait_for

ENDED = {"completed", "failed", "interrupted"}
SETTLE_S = 20.0


@pytest.fixture
def placed(tmp_path: Path) -> Iterator[tuple[NodeProc, str]]:
    """Control with a machine listener, `box` enrolled and connected, a Session placed on
    it that answered one turn (its worker warm on box)."""
    home = tmp_path / "control"
    home.mkdir(mode=0o700)
    control = NodeProc(home, "--machines-listen", "127.0.0.1:0").start()
    execution: NodeProc | None = None
    try:
        token = tmp_path / "token.txt"
        token.write_text(enroll(control, "box"))
        port = control.machines_port()
        execution = NodeProc(tmp_path / "box", "--execution", "--control",
                             f"ws://127.0.0.1:{port}", "--enrollment-file", str(token))  # fmt: skip
        execution.start()
        wait_for(lambda: link_of(control, "box").get("heartbeats", 0) >= 1,
                 "the Execution Node did not connect", control)  # fmt: skip
        project = tmp_path / "project"
        project.mkdir()
        project_id = control.call("project", "add", str(project))["project"]["projectId"]
        created = control.call("session", "create", "--project-id", project_id,
                               "--machine", "box", "--title", "remote")  # fmt: skip
        session_id = created["session"]["sessionId"]
        sent = control.maia("turn", "send", session_id, "hello", "--wait", "--timeout", "60s")
        assert sent.stdout == "hello\n"
        yield control, session_id
    finally:
        stop_pair(control, execution)


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
    assert _state(control, turn_id) in ENDED
