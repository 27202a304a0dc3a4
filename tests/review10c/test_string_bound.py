"""A string over 4096 characters (an `argv` element, a `command`) is refused saying it is
too long: the message said only "must be a non-empty string", which a long, non-empty
string plainly is."""

from __future__ import annotations

from maia.config import check_user_config


def test_a_long_string_is_told_its_bound() -> None:
    """The problem at argv[1] names the 4096-character bound."""
    document = {"executors": {"x": {"kind": "exec", "argv": ["cat", "a" * 4097]}}}
    (problem,) = check_user_config(document)[1]
    assert problem.path == "executors.x.argv[1]"
    assert problem.message == "must be a non-empty string of at most 4096 characters"


def test_4096_characters_still_pass() -> None:
    """The bound itself is allowed."""
    document = {"executors": {"x": {"kind": "exec", "argv": ["cat", "a" * 4096]}}}
    assert check_user_config(document)[1] == []
