"""Any JSON document given as a configuration file yields problems, never a crash: the
checkers return every problem with its path, and the parsers raise only
configuration_invalid."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from maia.config import (
    check_project_config,
    check_user_config,
    parse_project_config,
    parse_user_config,
)
from maia.protocol import MaiaError

KEYS = st.sampled_from([
    "schemaVersion", "projectKey", "swarm", "capacity", "defaults", "limits", "executors",
    "kind", "argv", "env", "allowedExecutors", "maintenance", "retention", "ttlDays",
    "observability", "traces", "context", "currency", "maxLiveSessions", "defaultTimezone",
    "executorRef", "x", "\ud800", "",
])  # fmt: skip
WORDS = st.sampled_from([
    "maia.project-config.v1", "maia.user-config.v1", "exec", "echo", "project:self/x",
    "user:a", "builtin:echo", "USD", "Europe/Paris",
])  # fmt: skip
SCALARS = (
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False)
    | st.text(max_size=20) | WORDS
)  # fmt: skip
JSON = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=5),
    max_leaves=30,
)


@given(document=JSON)
def test_checkers_never_crash(document: Any) -> None:
    """Whatever the document, the checkers answer a config or problems with a path."""
    _, problems = check_user_config(document)
    assert all(p.path for p in problems)
    project, found = check_project_config(document, project_id="project_" + "a" * 32)
    assert (project is None) == bool(found)


@given(document=JSON)
def test_parsers_raise_only_configuration_invalid(document: Any) -> None:
    """parse_* either return or raise configuration_invalid (never another exception)."""
    for parse in (parse_user_config, parse_project_config):
        refusal: MaiaError | None = None
        try:
            parse(document)
        except MaiaError as error:
            refusal = error
        if refusal is not None:
            assert refusal.code == "configuration_invalid"
            assert refusal.details["problems"]


def test_problem_list_is_bounded() -> None:
    """A document with thousands of mistakes lists at most 100 in its details."""
    document = {"executors": {f"e{i}": {"kind": "nope"} for i in range(300)}}
    with pytest.raises(MaiaError) as caught:
        parse_user_config(document)
    assert len(caught.value.details["problems"]) == 100
    assert "(and " in caught.value.message
