"""Enrollment and the machine link between two real Node processes on loopback."""

from __future__ import annotations

import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from ._nodes import NodeProc, enroll, link_of, wait_for


@pytest.fixture
def control(tmp_path: Path) -> Iterator[NodeProc]:
    node = NodeProc(tmp_path / "control", "--machines-listen", "127.0.0.1:0").start()
    try:
        yield node
    finally:
        node.stop()


def test_enroll_connect_heartbeat_revoke(control: NodeProc, tmp_path: Path) -> None:
    """An Execution Node enrolls with a token file, stores its credential 0600, connects and
    sends heartbeats; after `machine revoke` its link is closed and refused, also after a
    restart of the Execution Node (the credential is revoked: only a fresh enrollment helps)."""
    port = control.machines_port()
    token_file = tmp_path / "token.txt"
    token_file.write_text(enroll(control, "box") + "\n")
    flags = ("--execution", "--control", f"ws://127.0.0.1:{port}", "--enrollment-file",
             str(token_file))  # fmt: skip
    execution = NodeProc(tmp_path / "execution", *flags).start()
    try:
        wait_for(lambda: link_of(control, "box").get("heartbeats", 0) >= 2,
                 "no heartbeats reached the Control Node", control)  # fmt: skip
        credential = execution.home / "machine.json"
        assert stat.S_IMODE(credential.stat().st_mode) == 0o600
        shown = control.call("machine", "show", "box")["machine"]
        assert shown["state"] == "enrolled"
        assert shown["link"]["connected"]
        assert shown["link"]["refusedFrames"] == 0
        control.call("machine", "revoke", "--name", "box", "--yes")
        wait_for(lambda: "machine link refused" in execution.log(),
                 "the Execution Node did not see the refusal", execution)  # fmt: skip
        assert not link_of(control, "box")["connected"]
        execution.stop()
        execution.start()  # the same flags: the token is spent, the credential revoked
        wait_for(lambda: execution.log().count("machine link refused") >= 2,
                 "the restarted Execution Node was not refused", execution)  # fmt: skip
        assert not link_of(control, "box")["connected"]
        assert execution.process is not None
        assert execution.process.poll() is None
    finally:
        execution.stop()


def test_spent_token_is_refused_and_the_node_stays_up(control: NodeProc, tmp_path: Path) -> None:
    """A second Execution Node presenting an already-redeemed token is refused (token_spent),
    gets no credential, and keeps running; the first stays connected."""
    port = control.machines_port()
    token = enroll(control, "box")
    url = f"ws://127.0.0.1:{port}"
    first = NodeProc(tmp_path / "first", "--execution", "--control", url,
                     "--enrollment-token", token).start()  # fmt: skip
    second = NodeProc(tmp_path / "second", "--execution", "--control", url,
                      "--enrollment-token", token)  # fmt: skip
    try:
        wait_for(lambda: link_of(control, "box").get("heartbeats", 0) >= 1,
                 "the first Execution Node did not connect", control)  # fmt: skip
        second.start()
        wait_for(lambda: "token_spent" in second.log() or "already used" in second.log(),
                 "the spent token was not refused", second)  # fmt: skip
        assert not (second.home / "machine.json").exists()
        assert second.process is not None
        assert second.process.poll() is None
        assert link_of(control, "box")["connected"]
    finally:
        first.stop()
        second.stop()
