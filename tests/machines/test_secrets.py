"""The token and credential grammars of `actors.machine._secrets` match the whole text: a
value with anything after its last character, a trailing newline included, is refused
(`re.match` with `$` accepted one: `$` also matches just before a final "\\n")."""

from __future__ import annotations

import pytest

from actors.machine import (
    credential_machine,
    make_credential,
    make_token,
    new_machine_id,
    parse_token,
    pin_token,
    split_token,
)

KEY = bytes(range(32))
FINGERPRINT = "ab" * 32


@pytest.mark.parametrize("tail", ["\n", "\r\n", " ", "\n\n", "x"])
def test_a_token_or_credential_with_a_trailing_character_is_refused(tail: str) -> None:
    machine_id = new_machine_id()
    token = make_token(KEY, machine_id, 3)
    credential = make_credential(machine_id)
    assert parse_token(token) is not None
    assert credential_machine(credential) == machine_id
    assert parse_token(token + tail) is None
    assert credential_machine(credential + tail) is None


def test_a_pin_with_a_trailing_newline_is_not_split_off() -> None:
    """The text is kept whole (no pin), so the token Control checks is refused too."""
    token = make_token(KEY, new_machine_id(), 1)
    pinned = pin_token(token, FINGERPRINT)
    assert split_token(pinned) == (token, FINGERPRINT)
    assert split_token(pinned + "\n") == (pinned + "\n", None)
    assert parse_token(split_token(pinned + "\n")[0]) is None
    assert split_token(f"{token}\n.{FINGERPRINT}") == (f"{token}\n.{FINGERPRINT}", None)
