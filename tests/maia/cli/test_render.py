"""Human output: relative times, aligned tables, blocks, colour only when asked."""

from __future__ import annotations

from typing import Any

import pytest

from maia.cli._render import block, human, relative, table
from maia.core import parse_timestamp

NOW = parse_timestamp("2026-01-02T00:00:00.000Z")


@pytest.mark.parametrize(
    ("at", "text"),
    [
        ("2026-01-02T00:00:00.000Z", "just now"),
        ("2026-01-01T23:59:48.000Z", "12s ago"),
        ("2026-01-01T23:55:00.000Z", "5m ago"),
        ("2026-01-01T21:00:00.000Z", "3h ago"),
        ("2025-12-31T00:00:00.000Z", "2d ago"),
        ("2026-01-02T00:01:00.000Z", "in 1m"),
        ("not a time", "not a time"),
    ],
)
def test_relative_times(at: str, text: str) -> None:
    """Times read as age (or `in ...`), a small clock skew as just now, garbage as is."""
    assert relative(at, NOW) == text


def test_table_aligns_columns_under_headers() -> None:
    """Every cell starts at its header's column; missing values are `-`."""
    rows: list[dict[str, Any]] = [{"a": "x", "b": "long value"}, {"a": "longer cell", "b": None}]
    lines = table(rows, (("A", "a"), ("B", "b")), NOW).splitlines()
    assert lines[0].index("B") == lines[1].index("long value") == lines[2].index("-")
    assert table([], (("A", "a"),), NOW) == "(none)\n"


def test_colour_only_when_asked() -> None:
    """States are coloured only with colour=True; alignment ignores the escape codes."""
    rows = [{"state": "failed", "x": "1"}, {"state": "running", "x": "2"}]
    plain = table(rows, (("STATE", "state"), ("X", "x")), NOW)
    coloured = table(rows, (("STATE", "state"), ("X", "x")), NOW, colour=True)
    assert "\x1b[" not in plain
    assert "\x1b[31mfailed\x1b[0m" in coloured
    assert coloured.replace("\x1b[31m", "").replace("\x1b[32m", "").replace("\x1b[0m", "") == plain


def test_queue_and_mutation_rendering() -> None:
    """turn.queue.list is one table, active turn first; a mutation says done and its receipt."""
    entry = {"turnId": "turn_1", "state": "running", "position": 0, "revision": 2,
             "inputPreview": "hi", "createdAt": "2026-01-01T23:59:48.000Z"}  # fmt: skip
    queued = {**entry, "turnId": "turn_2", "state": "queued", "position": 1}
    text = human("turn.queue.list", {"sessionId": "s", "activeTurn": entry, "queue": [queued],
                                     "limit": 8}, NOW)  # fmt: skip
    lines = text.splitlines()
    assert lines[0].split()[:3] == ["POS", "TURN", "STATE"]
    assert "turn_1" in lines[1]
    assert "turn_2" in lines[2]
    project = {"projectId": "project_1", "rootPath": "/p"}
    result = {"delivery": "duplicate", "receiptId": "receipt_9", "project": project}
    done = human("project.add", result, NOW)
    assert "receipt_9" in done
    assert "duplicate" in done
    assert "rootPath" in done


def test_block_shows_absolute_time_beside_relative() -> None:
    """A timestamp in a block reads `12s ago  (the timestamp)`."""
    text = block({"createdAt": "2026-01-01T23:59:48.000Z", "n": 3}, None, NOW)
    assert "12s ago  (2026-01-01T23:59:48.000Z)" in text
    assert "n          3" in text


def test_object_with_list_shows_block_then_table() -> None:
    """turn.show: the turn's fields and `itemsTruncated` in one aligned block, then items;
    an empty candidate list after a block is left out."""
    turn = {"turnId": "turn_1", "state": "completed", "outputText": "hi"}
    items = [{"itemId": "item_1", "kind": "message", "state": "completed", "sequence": 1,
              "text": "hi"}]  # fmt: skip
    text = human("turn.show", {"turn": turn, "items": items, "itemsTruncated": False}, NOW)
    head, tail = text.split("\n\n")
    assert head.splitlines()[0].startswith("turnId          turn_1")
    assert "itemsTruncated  no" in head
    assert tail.splitlines()[0].split() == ["SEQ", "KIND", "STATE", "TEXT"]
    resolved = {"status": "resolved", "kind": "session", "id": "session_1", "candidates": []}
    assert "(none)" not in human("reference.resolve", resolved, NOW)
    assert human("session.list", {"sessions": [], "nextCursor": None}, NOW) == "(none)\n"


def test_a_sessions_status_prompt_and_failure_are_shown() -> None:
    """`session show` names what the docs promise: a waiting Session's status and the
    approval it waits on, and a failed start's message (they were only in --json)."""
    session = {
        "sessionId": "session_a", "state": "waiting-approval", "status": "approval",
        "prompt": {"approvalId": "approval_b", "kind": "command", "summary": "rm -rf build"},
        "failureMessage": "start failed: /gone is not a directory",
        "createdAt": "2026-01-01T23:59:48.000Z",
    }  # fmt: skip
    text = human("session.show", {"session": session}, NOW)
    lines = dict(line.split(None, 1) for line in text.splitlines())
    assert lines["status"] == "approval"
    assert lines["prompt"] == "command approval_b: rm -rf build"
    assert lines["failureMessage"] == "start failed: /gone is not a directory"


def test_approvals_list_as_a_table_and_show_as_a_block() -> None:
    """`approval list` is a table with one row per approval; `approval show` a block."""
    approval = {
        "approvalId": "approval_b", "sessionId": "session_a", "turnId": "turn_c",
        "state": "pending", "kind": "command", "summary": "touch x", "options": ["allow"],
        "canRemember": False, "revision": 1, "createdAt": "2026-01-01T23:59:48.000Z",
    }  # fmt: skip
    listed = human("approval.list", {"approvals": [approval]}, NOW).splitlines()
    assert listed[0].split() == ["ID", "SESSION", "STATE", "KIND", "ASKED", "SUMMARY"]
    assert listed[1].split()[:4] == ["approval_b", "session_a", "pending", "command"]
    shown = dict(line.split(None, 1) for line in human("approval.show", {"approval": approval},
                                                        NOW).splitlines())  # fmt: skip
    assert (shown["approvalId"], shown["state"], shown["summary"]) == (
        "approval_b", "pending", "touch x")  # fmt: skip
