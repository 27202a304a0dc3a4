"""The admission diff: exact key-by-key changes between two documents."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from maia.config import diff

LEAF = st.integers(-5, 5) | st.booleans() | st.text(max_size=3) | st.lists(st.integers(0, 3),
                                                                            max_size=2)  # fmt: skip
DOC = st.recursive(
    LEAF, lambda inner: st.dictionaries(st.sampled_from("abcd"), inner, max_size=3), max_leaves=12
)


def _leaves(value: Any, path: str = "") -> dict[str, Any]:
    if isinstance(value, dict) and value:
        out: dict[str, Any] = {}
        for key, inner in value.items():
            out.update(_leaves(inner, f"{path}.{key}" if path else key))
        return out
    return {} if value in ({}, None) else {path or "$": value}


@given(before=st.dictionaries(st.sampled_from("abcd"), DOC, max_size=4),
       after=st.dictionaries(st.sampled_from("abcd"), DOC, max_size=4))  # fmt: skip
def test_applying_the_diff_to_before_gives_after(before: Any, after: Any) -> None:
    """The changes, applied to the old document's keys, give exactly the new one's; an
    unchanged key is never listed."""
    state = _leaves(before)
    changes = diff(before, after)
    for change in changes:
        if change["change"] == "removed":
            assert state.pop(change["path"]) == change["before"]
        else:
            assert state.get(change["path"]) == change.get("before")
            state[change["path"]] = change["after"]
    assert state == _leaves(after)
    assert diff(after, after) == []


def test_a_type_change_is_a_change() -> None:
    """true and 1 are different JSON values, though Python compares them equal."""
    assert diff({"a": True}, {"a": 1}) == [
        {"path": "a", "change": "changed", "before": True, "after": 1}
    ]


def test_lists_are_one_value() -> None:
    """A list is compared whole: one change, with both lists."""
    assert diff({"a": {"argv": ["x"]}}, {"a": {"argv": ["x", "y"]}}) == [
        {"path": "a.argv", "change": "changed", "before": ["x"], "after": ["x", "y"]}
    ]
