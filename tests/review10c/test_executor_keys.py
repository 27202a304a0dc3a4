"""Each executor kind takes only its own keys, and each problem is reported once: an `echo`
executor silently took the agent adapters' keys (`model`, `sandbox`, `command`, …), and an
unknown key of an exec or agent executor, or a bad `env` name of an agent executor, was
listed twice."""

from __future__ import annotations

from typing import Any

import pytest

from maia.config import check_user_config

CASES: list[tuple[dict[str, Any], list[str]]] = [
    ({"kind": "echo", "model": "m", "sandbox": "read-only"}, ["model", "sandbox"]),
    ({"kind": "echo", "command": "c", "permissionMode": "plan"}, ["command", "permissionMode"]),
    ({"kind": "exec", "argv": ["x"], "foo": 1}, ["foo"]),
    ({"kind": "exec", "argv": ["x"], "model": "m"}, ["model"]),
    ({"kind": "claude-code", "foo": 1}, ["foo"]),
    ({"kind": "claude-code", "env": ["bad name"]}, ["env[0]"]),
    ({"kind": "codex", "permissionMode": "plan"}, ["permissionMode"]),
    ({"kind": "acp", "argv": ["a"], "model": "m"}, ["model"]),
]


@pytest.mark.parametrize(("body", "paths"), CASES)
def test_each_problem_once_at_its_key(body: dict[str, Any], paths: list[str]) -> None:
    """The problems are exactly the keys the kind does not take, one each."""
    _, problems = check_user_config({"executors": {"a": body}})
    assert [p.path for p in problems] == [f"executors.a.{p}" for p in paths]


def test_each_kind_still_takes_its_keys() -> None:
    """A full entry of every kind is valid."""
    executors = {
        "e": {"kind": "echo", "env": ["MAIA_ECHO_LOG"]},
        "x": {"kind": "exec", "argv": ["cat"], "env": [], "wallTimeMs": 1000,
              "promptNewline": False, "maxOutputBytes": 10},
        "c": {"kind": "claude-code", "command": "claude", "model": "m", "permissionMode": "plan",
              "env": ["HOME"], "wallTimeMs": 1000},
        "o": {"kind": "codex", "command": "codex", "model": "m", "approvalPolicy": "never",
              "sandbox": "read-only"},
        "a": {"kind": "acp", "argv": ["agent"], "env": [], "wallTimeMs": 1000},
    }  # fmt: skip
    config, problems = check_user_config({"executors": executors})
    assert problems == []
    assert sorted(config.executors) == ["a", "c", "e", "o", "x"]
