"""The strict JSONC reader: comments and trailing commas only, errors with line and column."""

from __future__ import annotations

import contextlib
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from maia.config import MAX_DEPTH, JsoncError, loads_jsonc

JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20,
)


def test_comments_and_trailing_commas() -> None:
    """Line and block comments and trailing commas are accepted; strings keep `//` text."""
    text = """
    // the user's config
    {
      "a": 1, /* inline */
      "url": "http://x//y",
      "list": [1, 2, 3,],
    }
    """
    assert loads_jsonc(text) == {"a": 1, "url": "http://x//y", "list": [1, 2, 3]}


@given(JSON_VALUES)
def test_plain_json_reads_as_json(value: object) -> None:
    """Any JSON document (without floats) reads back equal to what json.loads gives."""
    text = json.dumps(value, indent=1)
    assert loads_jsonc(text) == json.loads(text)


@pytest.mark.parametrize(
    ("text", "line", "column", "words"),
    [
        ('{\n  "a": 1,\n  "a": 2\n}', 3, 3, "duplicate key 'a'"),
        ('{"a": NaN}', 1, 7, "unexpected character"),
        ('{"a": Infinity}', 1, 7, "unexpected character"),
        ("[1,,2]", 1, 4, "unexpected character"),
        ("{,}", 1, 2, "expected a quoted key"),
        ("{a: 1}", 1, 2, "expected a quoted key"),
        ("['x']", 1, 2, "unexpected character"),
        ("[1] 2", 1, 5, "after the document"),
        ("/* open", 1, 1, "unterminated"),
        ('{"a": "line\nbreak"}', 1, 12, "a raw control character (a line break, a tab)"),
        ('{"a": "tab\there"}', 1, 11, "write it as \\n or \\t"),
        ('{"a": "open', 1, 7, "unterminated string"),
        ("[0x10]", 1, 3, "expected ','"),
        ("", 1, 1, "end of input"),
    ],
)
def test_refusals_name_line_and_column(text: str, line: int, column: int, words: str) -> None:
    """Each kind of fault is refused with its line and column and a readable reason."""
    with pytest.raises(JsoncError) as caught:
        loads_jsonc(text, "config.jsonc")
    assert (caught.value.line, caught.value.column) == (line, column)
    assert words in caught.value.reason
    assert not caught.value.reason.endswith(" at")  # the stdlib's, whose position we drop
    assert str(caught.value).startswith(f"config.jsonc:{line}:{column}: ")


def test_depth_is_bounded() -> None:
    """Nesting past MAX_DEPTH is an error, not a RecursionError."""
    with pytest.raises(JsoncError, match="nested deeper"):
        loads_jsonc("[" * (MAX_DEPTH + 2) + "]" * (MAX_DEPTH + 2))
    with pytest.raises(JsoncError):
        loads_jsonc("[" * 100_000)


@given(st.text(max_size=200))
def test_arbitrary_text_only_raises_jsonc_error(text: str) -> None:
    """Whatever the text, the reader returns a value or raises JsoncError, nothing else."""
    with contextlib.suppress(JsoncError):
        loads_jsonc(text)


def test_lone_surrogate_escapes_are_refused() -> None:
    """A lone surrogate escape, in a key or a value, is refused at its line and column."""
    with pytest.raises(JsoncError) as caught:
        loads_jsonc('{\n  "a": "x\\ud800"\n}')
    assert (caught.value.line, caught.value.column) == (2, 8)
    with pytest.raises(JsoncError):
        loads_jsonc('{"\\udfff": 1}')
    assert loads_jsonc('"\\ud83d\\ude00"') == "\U0001f600"
