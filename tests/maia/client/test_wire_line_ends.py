"""A final newline is no part of a wire value: `re.match` with a `$` pattern let one through
(`is_wire_id("abc\\n")` was True, a method `node.status\\n` was looked up as an operation
instead of refused as a malformed envelope). The validators now match the whole text; at the
real API socket an ID with a trailing or embedded line end is `validation_failed` naming
its field and a method with one is `invalid_request` naming `method`."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from maia.client import Discovery
from maia.client._sync import connect_sync
from maia.core import (
    GENERATED_ID_PATTERN,
    MaiaError,
    check_wire_id,
    id_prefix,
    is_digest,
    is_wire_id,
    new_id,
    parse_timestamp,
)

NodeProcess = tuple[Path, Discovery]

_ID_CHARS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._:-"
_LEAD = _ID_CHARS[:62]
_ENDS = st.sampled_from(["\n", "\r\n", "\r", "\x0b", "\x0c", "\x85", "\u2028"])


@pytest.mark.parametrize(
    "value", ["abc\n", "session_" + "0a" * 16 + "\n", "a\nb", "\nabc", "abc\r\n", "abc\x00"]
)
def test_wire_id_refuses_line_ends(value: str) -> None:
    """A trailing newline (the `$` hole), an embedded or leading one: refused, named."""
    assert not is_wire_id(value)
    with pytest.raises(MaiaError) as caught:
        check_wire_id(value, "sessionId")
    assert (caught.value.code, caught.value.details["path"]) == ("validation_failed", "sessionId")


def test_generated_ids_digests_and_timestamps_refuse_a_final_newline() -> None:
    """The same hole in the other core validators: id_prefix, is_digest, parse_timestamp."""
    session = new_id("session")
    assert id_prefix(session) == "session"
    assert id_prefix(session + "\n") is None
    assert is_digest("sha256:" + "a" * 64)
    assert not is_digest("sha256:" + "a" * 64 + "\n")
    assert parse_timestamp("2026-01-02T03:04:05.678Z") == 1767323045678
    with pytest.raises(MaiaError) as caught:
        parse_timestamp("2026-01-02T03:04:05.678Z\n", "since")
    assert (caught.value.code, caught.value.details["path"]) == ("validation_failed", "since")
    assert GENERATED_ID_PATTERN.endswith("$")  # the pattern published for ECMA-262 stays


@st.composite
def _ids_with_a_line_end(draw: st.DrawFn) -> str:
    """A valid wire ID (or a generated one) with a line end at its end, start or inside."""
    base = draw(
        st.one_of(
            st.builds(
                lambda lead, rest: lead + rest,
                st.sampled_from(_LEAD),
                st.text(alphabet=_ID_CHARS, max_size=40),
            ),
            st.sampled_from(["session", "turn", "project", "approval"]).map(new_id),
        )
    )
    end = draw(_ENDS)
    where = draw(st.sampled_from(["end", "end", "start", "inside"]))
    if where == "end" or len(base) < 2:
        return base + end
    if where == "start":
        return end + base
    cut = draw(st.integers(1, len(base) - 1))
    return base[:cut] + end + base[cut:]


_ID_FIELDS = [
    ("session.show", "sessionId"),
    ("turn.show", "turnId"),
    ("project.show", "projectId"),
    ("approval.show", "approvalId"),
]


@settings(
    derandomize=True,
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(value=_ids_with_a_line_end(), op=st.sampled_from(_ID_FIELDS))
def test_api_socket_refuses_ids_with_line_ends(
    node_process: NodeProcess, value: str, op: tuple[str, str]
) -> None:
    """Sent raw (no client-side check) to the real Node: validation_failed naming the field,
    never a look-up of the ID; the connection goes on serving."""
    home, _ = node_process
    method, field = op
    with connect_sync(home=home) as client:
        with pytest.raises(MaiaError) as caught:
            client.request(method, {field: value})
        assert (caught.value.code, caught.value.details.get("path")) == (
            "validation_failed",
            field,
        )
        assert "storage" in client.request("node.status")


@pytest.mark.parametrize("method", ["node.status\n", "node.status\r\n", "node.\nstatus"])
def test_api_socket_refuses_a_method_with_a_line_end(
    node_process: NodeProcess, method: str
) -> None:
    """The envelope's method grammar: invalid_request naming `method`, not unknown_method."""
    home, _ = node_process
    with connect_sync(home=home) as client:
        with pytest.raises(MaiaError) as caught:
            client.request(method)
        assert (caught.value.code, caught.value.details.get("path")) == (
            "invalid_request",
            "method",
        )
        assert "storage" in client.request("node.status")
