"""Review fix (s7-fix): the agent adapters' item fields are always UTF-8 encodable, so a
model's lone surrogate escape cannot make a worker frame unencodable; other text is kept."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from worker_bridge.workers._items import MAX_FIELD_CHARS, bounded, well_formed

# st.characters() never draws a surrogate: they are mixed in as code points.
SURROGATES = st.integers(0xD800, 0xDFFF).map(chr)


@given(st.text(alphabet=st.one_of(st.characters(), SURROGATES), max_size=64))
def test_any_text_becomes_encodable_and_keeps_its_length(text: str) -> None:
    """Every surrogate code point becomes U+FFFD, one for one; the result encodes as UTF-8."""
    cleaned = well_formed(text)
    cleaned.encode("utf-8")
    assert len(cleaned) == len(text)
    assert all(a == b or 0xD800 <= ord(a) <= 0xDFFF for a, b in zip(text, cleaned, strict=True))


@given(st.text(max_size=64))
def test_text_without_surrogates_is_unchanged(text: str) -> None:
    """Well-formed text (Hypothesis's default alphabet has no surrogates) passes as it is."""
    assert well_formed(text) == text


def test_bounded_fields_replace_lone_surrogates_in_keys_values_and_cut_strings() -> None:
    """Nested values, keys and a string past the cut all come out encodable."""
    value = {"command\udfff": ["touch a\ud800b", {"x": "\udc00" * (MAX_FIELD_CHARS + 5)}]}
    out = bounded(value)
    assert out == {
        "command\ufffd": ["touch a\ufffdb", {"x": "\ufffd" * MAX_FIELD_CHARS + "…[truncated]"}]
    }
