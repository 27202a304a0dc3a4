"""The agent executor kinds (claude-code, codex, acp) in config.jsonc."""

from __future__ import annotations

import pytest

from maia.config import parse_user_config
from maia.protocol import MaiaError


def test_agent_executors_parse_with_their_options() -> None:
    """Each agent kind keeps its own keys as worker options; `default` mode is the CLI's."""
    config = parse_user_config({"executors": {
        "claude": {"kind": "claude-code", "model": "opus", "permissionMode": "acceptEdits",
                   "env": ["ANTHROPIC_API_KEY"]},
        "plain": {"kind": "claude-code", "permissionMode": "default"},
        "codex": {"kind": "codex", "command": "/opt/codex", "approvalPolicy": "on-request",
                  "sandbox": "read-only"},
        "gemini": {"kind": "acp", "argv": ["gemini", "--acp"], "wallTimeMs": 5000},
    }})  # fmt: skip
    claude = config.executors["claude"]
    assert (claude.kind, claude.env) == ("claude-code", ("ANTHROPIC_API_KEY",))
    assert claude.options == {"model": "opus", "permissionMode": "acceptEdits"}
    assert config.executors["plain"].options == {}
    assert config.executors["codex"].options == {"command": "/opt/codex",
                                                 "approvalPolicy": "on-request",
                                                 "sandbox": "read-only"}  # fmt: skip
    gemini = config.executors["gemini"]
    assert (gemini.argv, gemini.wall_time_ms) == (("gemini", "--acp"), 5000)


@pytest.mark.parametrize(("executor", "path"), [
    ({"kind": "claude-code", "sandbox": "read-only"}, "executors.x.sandbox"),
    ({"kind": "codex", "permissionMode": "plan"}, "executors.x.permissionMode"),
    ({"kind": "claude-code", "permissionMode": "yolo"}, "executors.x.permissionMode"),
    ({"kind": "codex", "approvalPolicy": 3}, "executors.x.approvalPolicy"),
    ({"kind": "acp"}, "executors.x.argv"),
    ({"kind": "acp", "argv": ["a"], "model": "m"}, "executors.x.model"),
    ({"kind": "exec", "argv": ["a"], "model": "m"}, "executors.x.model"),
    ({"kind": "claude-code", "modle": "m"}, "executors.x.modle"),
    ({"kind": "gemini"}, "executors.x.kind"),
])  # fmt: skip
def test_bad_agent_executors_name_the_key(executor: dict[str, object], path: str) -> None:
    """A key another kind owns, a bad value, a missing argv or a typo is refused by path."""
    with pytest.raises(MaiaError) as caught:
        parse_user_config({"executors": {"x": executor}})
    assert caught.value.code == "configuration_invalid"
    assert caught.value.details["path"] == path
