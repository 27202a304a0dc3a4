"""`turn.show`'s reply budget: text measured as the reply's JSON, cut to fit a byte budget,
and a turn's outputText cut (marked) when its escapes would swell it past its share."""

from __future__ import annotations

import orjson
from hypothesis import given
from hypothesis import strategies as st

from maia.protocol import Turn
from maia.service._turn_items import OUTPUT_BUDGET_BYTES, _bounded_turn, _fit, encoded_size


@given(st.text(max_size=200), st.integers(min_value=2, max_value=2000))
def test_fit_is_the_longest_start_within_the_budget(text: str, budget: int) -> None:
    """`_fit` keeps a start of the text whose JSON fits the budget, one character more
    would not."""
    kept = _fit(text, budget)
    assert text.startswith(kept)
    assert len(orjson.dumps(kept)) <= budget
    if len(kept) < len(text):
        assert encoded_size(text[: len(kept) + 1]) > budget


def _turn(output: str) -> Turn:
    return Turn(turn_id="turn_a", session_id="session_a", state="completed", revision=3,
                created_at="2026-12-01T00:00:00.000Z", input_preview="p",
                output_text=output)  # fmt: skip


def test_an_escape_heavy_output_is_cut_and_marked() -> None:
    """262,144 control characters (1.5 MiB as JSON) become a marked start within the
    output's share; ordinary text of the same length passes whole, unmarked."""
    heavy = _bounded_turn(_turn("\x01" * 262_144))
    assert heavy.output_truncated is True
    assert heavy.output_text is not None
    assert encoded_size(heavy.output_text) <= OUTPUT_BUDGET_BYTES
    assert len(heavy.output_text) > 60_000
    plain = _bounded_turn(_turn("a" * 262_144))
    assert (plain.output_text, plain.output_truncated) == ("a" * 262_144, None)
