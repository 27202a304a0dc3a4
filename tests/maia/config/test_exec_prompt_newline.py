"""The exec executor's `promptNewline` key: default true, false read back, other values
refused naming the key."""

from __future__ import annotations

import pytest

from maia.config import parse_user_config
from maia.protocol import MaiaError


def _executors(body: dict[str, object]) -> dict[str, object]:
    return {"schemaVersion": "maia.user-config.v1", "executors": {"calc": body}}


def test_prompt_newline_defaults_to_true_and_reads_false() -> None:
    """Absent: the prompt ends with a newline; `false` turns that off."""
    plain = parse_user_config(_executors({"kind": "exec", "argv": ["/usr/bin/bc"]}))
    assert plain.executor("user:calc").prompt_newline is True
    exact = parse_user_config(
        _executors({"kind": "exec", "argv": ["/usr/bin/bc"], "promptNewline": False})
    )
    assert exact.executor("user:calc").prompt_newline is False


def test_prompt_newline_must_be_a_boolean() -> None:
    """`"promptNewline": "no"` is refused with the key's path."""
    with pytest.raises(MaiaError) as refused:
        parse_user_config(_executors({"kind": "exec", "argv": ["/bin/cat"], "promptNewline": "no"}))
    assert refused.value.details["path"] == "executors.calc.promptNewline"
