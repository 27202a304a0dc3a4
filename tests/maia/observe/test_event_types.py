"""`eventTypes` is checked alike by `events.read` and `observe.events`, at a real Node's
sockets: a type no Node emits is `validation_failed` naming the field, and changes nothing;
every journal type passes both, and the live types (`item.delta`, …) pass the stream."""

from __future__ import annotations

from typing import Any

import orjson
import pytest
import trio
from hypothesis import given, settings
from hypothesis import strategies as st
from trio_websocket import open_websocket_url

from maia.core import MaiaError
from maia.observe import LIVE_TYPES, check_observed_types
from maia.service import journal_event_types

from ..node._raw import hello, open_observation_socket, request
from ..node.conftest import NodeProcess as Node

JOURNAL = sorted(journal_event_types())
TYPES = st.one_of(
    st.text(st.characters(exclude_categories=["Cs"]), max_size=70),  # anything at all
    st.from_regex(r"\A[a-z][a-z0-9_.-]{0,20}\Z"),  # the pattern's shape, mostly unknown
    st.sampled_from([*JOURNAL, *sorted(LIVE_TYPES)]),
    st.sampled_from(JOURNAL).map(lambda t: t[:-1]),  # a typo of a real one
)


async def _events_read(node: Node, event_type: str) -> dict[str, Any]:
    """The answer to events.read filtered on `event_type` over /api/v1."""
    async with open_websocket_url(f"ws://127.0.0.1:{node.port}/api/v1",
                                  extra_headers=node.auth) as ws:  # fmt: skip
        assert (await hello(ws))["ok"]
        params = {"position": {"kind": "start"}, "eventTypes": [event_type], "limit": 1}
        body = {"id": 1, "method": "events.read", "params": params}
        return await request(ws, orjson.dumps(body))


async def _observe(node: Node, event_type: str) -> dict[str, Any]:
    """The first answer to observe.events filtered on `event_type`, on the observation
    socket."""
    query = {"eventTypes": [event_type], "limit": 1}
    body = {"id": 1, "method": "observe.events", "params": {"query": query}}
    async with open_observation_socket(node.port, node.auth) as ws:
        assert (await hello(ws))["ok"]
        answer = await request(ws, orjson.dumps(body))
    return answer


def _refusal(answer: dict[str, Any]) -> str:
    assert answer["ok"] is False, answer
    error = answer["error"]
    assert error["code"] == "validation_failed", error
    path: str = error["details"]["path"]
    return path


async def _both(node: Node, event_type: str) -> None:
    with trio.fail_after(30):
        read = await _events_read(node, event_type)
        observed = await _observe(node, event_type)
    if event_type in journal_event_types():
        assert read["ok"] is True, read
        assert read["result"]["status"] == "page"
    else:
        assert _refusal(read) == "eventTypes[0]"
    if event_type in journal_event_types() | LIVE_TYPES:
        assert observed["ok"] is True, observed
        assert observed["result"]["frame"]["type"] == "snapshot"
    else:
        assert _refusal(observed) == "query.eventTypes[0]"


@pytest.mark.parametrize(
    ("event_type", "read_ok", "observe_ok"),
    [
        ("turn.completed", True, True),
        ("project.added", True, True),
        ("item.delta", False, True),  # live only: never in the journal
        ("item.started", False, True),
        ("worker.diagnostic", False, True),
        ("turn.bogus", False, False),
        ("turn.complete", False, False),  # a typo
        ("Turn.Completed", False, False),  # not even the pattern
    ],
)
def test_bad_and_good_types_at_both_ops(
    node_process: Node, event_type: str, read_ok: bool, observe_ok: bool
) -> None:
    """Known types are served, unknown ones refused naming eventTypes[0] (events.read) and
    query.eventTypes[0] (observe.events); a typo's message names the type it resembles."""
    read = trio.run(_events_read, node_process, event_type)
    observed = trio.run(_observe, node_process, event_type)
    assert read["ok"] is read_ok, read
    assert observed["ok"] is observe_ok, observed
    if not observe_ok:
        assert _refusal(observed) == "query.eventTypes[0]"
    if event_type == "turn.complete":
        assert "did you mean turn.completed?" in observed["error"]["message"]
        assert "did you mean turn.completed?" in read["error"]["message"]


@settings(max_examples=40)
@given(event_type=TYPES)
def test_any_string_as_a_type_gets_the_same_answer_from_both_ops(
    node_process: Node, event_type: str
) -> None:
    """Over arbitrary strings: each op serves a type it can carry and refuses any other
    with validation_failed naming the field; the Node stays up."""
    trio.run(_both, node_process, event_type)
    assert node_process.process.poll() is None, "the Node exited"


def test_the_check_names_the_first_unknown_type_and_passes_live_ones() -> None:
    """check_observed_types passes journal and live types and names the first other one."""
    check_observed_types("query.eventTypes", ["item.delta", "turn.completed"], frozenset(JOURNAL))
    with pytest.raises(MaiaError) as refused:
        check_observed_types("query.eventTypes", ["item.delta", "x.y"], frozenset(JOURNAL))
    assert refused.value.code == "validation_failed"
    assert refused.value.details["path"] == "query.eventTypes[1]"
