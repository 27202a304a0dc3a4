"""Definition references: the three forms parse and print back; everything else is refused."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from maia.core import (
    DEFINITION_REF_PATTERN,
    DefinitionRef,
    MaiaError,
    format_definition_ref,
    parse_definition_ref,
)

PART = st.from_regex(r"\A[A-Za-z0-9][A-Za-z0-9._:-]{0,40}\Z")


@pytest.mark.parametrize(
    ("text", "ref"),
    [
        ("builtin:echo", DefinitionRef("builtin", "echo")),
        ("user:my-agent.v2", DefinitionRef("user", "my-agent.v2")),
        ("project:project_0a/reviewer", DefinitionRef("project", "reviewer", "project_0a")),
    ],
)
def test_three_forms_parse_and_print(text: str, ref: DefinitionRef) -> None:
    """builtin:, user: and project:<id>/ parse to their parts and print back unchanged."""
    assert parse_definition_ref(text) == ref
    assert format_definition_ref(ref) == text


@settings(max_examples=50)
@given(st.sampled_from(["builtin", "user"]), PART)
def test_round_trip_scoped(scope: str, ident: str) -> None:
    """Any identifier under builtin:/user: round-trips."""
    text = f"{scope}:{ident}"
    assert format_definition_ref(parse_definition_ref(text)) == text


@settings(max_examples=50)
@given(PART.filter(lambda p: p != "self"), PART)
def test_round_trip_project(project: str, ident: str) -> None:
    """Any project:<id>/<id> (but project:self) round-trips."""
    text = f"project:{project}/{ident}"
    assert format_definition_ref(parse_definition_ref(text)) == text


@pytest.mark.parametrize(
    "text",
    [
        "echo",
        "session_0123",
        "builtin:",
        "user:",
        "system:echo",
        "builtin:a/b",
        "project:p",
        "project:/x",
        "project:p/",
        "project:self/x",
        "project:p/x/y",
        "user: x",
        "user:-x",
        "builtin:" + "x" * 129,
        "",
    ],
)
def test_refusals(text: str) -> None:
    """Bare IDs, unknown scopes, empty parts, project:self and extra slashes are refused."""
    with pytest.raises(MaiaError) as caught:
        parse_definition_ref(text, "executor")
    assert caught.value.code == "validation_failed"
    assert caught.value.details == {"path": "executor"}


@pytest.mark.parametrize("text", ["builtin:echo", "user:a", "project:p/x", "project:selfish/x"])
def test_pattern_agrees_on_accepted(text: str) -> None:
    """DEFINITION_REF_PATTERN (the schemas' copy of the grammar) accepts what parse accepts."""
    assert re.search(DEFINITION_REF_PATTERN, text)
    parse_definition_ref(text)


@pytest.mark.parametrize("text", ["echo", "project:self/x", "builtin:a/b", "user:"])
def test_pattern_agrees_on_refused(text: str) -> None:
    """The pattern refuses what parse refuses (project:self included)."""
    assert not re.search(DEFINITION_REF_PATTERN, text)
