"""`maia machine list` and `maia machine show NAME` print people's output: a table of the
machines and a block with the link's state, heartbeats and barrier named one per line, as
docs/machines.md promises (`maia machine show box  # link, heartbeats, barrier`). Before,
both printed one cut JSON blob (`machines  [{"machineId":"machine_…","n…`)."""

from __future__ import annotations

from typing import Any

from maia.cli._render import human
from maia.core import parse_timestamp

NOW = parse_timestamp("2026-12-02T01:00:00.000Z")
MACHINE: dict[str, Any] = {
    "machineId": "machine_d976ce04bca87b6815b849013cbceffd", "name": "box",
    "state": "enrolled", "incarnation": 2, "revocationRevision": 1,
    "recoveryRequired": False, "revision": 4, "createdAt": "2026-12-02T00:57:00.797Z",
    "updatedAt": "2026-12-02T00:59:00.000Z", "executionNodeId": "node_5b827da1298e51be03",
    "enrolledAt": "2026-12-02T00:58:00.000Z", "lastSeenAt": "2026-12-02T00:59:58.000Z",
}  # fmt: skip
LINK: dict[str, Any] = {
    "connected": True, "heartbeats": 17, "lastReportSequence": 17, "lastHeartbeatAgeMs": 812,
    "barrier": True, "assignments": 3, "leaseHorizonInMs": 24000, "refusedFrames": 0,
}  # fmt: skip


def _lines(text: str) -> dict[str, str]:
    """`key  value` lines as a mapping (the first word, the rest)."""
    pairs = (line.split(None, 1) for line in text.splitlines() if line.strip())
    return {p[0]: p[1] if len(p) > 1 else "" for p in pairs}


def test_list_is_a_table_of_the_machines() -> None:
    """One row per machine under a header, with its name, state and incarnation; no JSON."""
    text = human("machine.list", {"machines": [MACHINE]}, NOW)
    header, row = text.splitlines()
    assert header.split()[:3] == ["NAME", "STATE", "INCARNATION"]
    assert row.split()[:3] == ["box", "enrolled", "2"]
    assert "{" not in text


def test_show_names_the_link_state_heartbeats_and_barrier() -> None:
    """Each field of the machine and of its link is its own line; nothing is cut."""
    text = human("machine.show", {"machine": MACHINE | {"link": LINK}}, NOW)
    shown = _lines(text)
    assert shown["name"] == "box"
    assert shown["state"] == "enrolled"
    assert shown["link.connected"] == "yes"
    assert shown["link.heartbeats"] == "17"
    assert shown["link.barrier"] == "yes"
    assert shown["link.assignments"] == "3"
    assert shown["link.leaseHorizonInMs"] == "24000"
    assert shown["lastSeenAt"].startswith("2s ago")
    assert "{" not in text
    assert "…" not in text


def test_enroll_shows_the_token_once_beside_the_machine() -> None:
    """The enroll answer shows the machine's block and the token to hand over."""
    result = {"delivery": "new", "receiptId": "receipt_1", "token": "tok_abc",
              "tokenExpiresAt": "2026-12-02T01:10:00.000Z",
              "machine": MACHINE | {"state": "pending"}}  # fmt: skip
    shown = _lines(human("machine.enroll.confirm", result, NOW))
    assert shown["token"] == "tok_abc"
    assert shown["state"] == "pending"
    assert shown["tokenExpiresAt"].startswith("in 10m")


def test_the_enrollment_token_is_never_cut() -> None:
    """The token is printed whole in human output too (cells over 60 characters are cut
    with `…`: a cut token cannot be handed to the Execution Node)."""
    token = "mtok1.machine_b74eb277fe28cc9df7c228d0393ed039.1." + "x" * 43
    result = {"delivery": "new", "receiptId": "receipt_1", "token": token,
              "tokenExpiresAt": "2026-12-02T01:10:00.000Z", "machine": MACHINE}  # fmt: skip
    assert _lines(human("machine.enroll.confirm", result, NOW))["token"] == token
