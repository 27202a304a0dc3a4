"""Placeholders in fixtures: a string that is exactly `$name` is the saved value; anything
else (a trailing newline included) is text, with only `${name}` replaced."""

from __future__ import annotations

import pytest

from maia.conformance._values import PlaceholderError, substitute


def test_exactly_dollar_name_is_the_saved_value_of_any_type() -> None:
    """`$count` gives the saved value itself, not its text."""
    assert substitute("$count", {"count": 5}) == 5
    assert substitute({"a": ["$count"]}, {"count": 5}) == {"a": [5]}


@pytest.mark.parametrize("text", ["$count\n", "$count\n\n", "\n$count", "$count "])
def test_a_placeholder_with_more_text_is_not_a_whole_placeholder(text: str) -> None:
    """`$count\\n` is not exactly `$count` (`re.match` with `$` took it as one), so it stays
    text: neither swapped for the saved value nor an unknown placeholder."""
    assert substitute(text, {"count": 5}) == text
    assert substitute(text, {}) == text


def test_unknown_whole_placeholder_is_refused() -> None:
    """`$missing` names nothing saved: PlaceholderError."""
    with pytest.raises(PlaceholderError):
        substitute("$missing", {})


def test_inline_placeholder_in_text_ending_in_newline() -> None:
    """`${name}` inside text with a final newline is still replaced by its text."""
    assert substitute("n=${count}\n", {"count": 5}) == "n=5\n"
