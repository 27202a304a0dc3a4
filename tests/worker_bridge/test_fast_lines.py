"""The Node's hot-path lines (`send_prompt`, the `ack` line) write the bytes `send` writes
for the same frame, leave the connection as `send` does, and refuse what `send` refuses."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

import worker_bridge as wb

TEXTS = st.text(max_size=300) | st.sampled_from(["\ud800", 'a"b\\c\n\x00\x1f\x7f', "é\u2028😀"])
IDS = st.text(max_size=140) | st.sampled_from(["turn_0123", "\ud800", "x" * 128])


def _ready_node(worker_version: str = "1.0.0") -> tuple[wb.WireConnection, wb.WireConnection]:
    """A Node connection past the handshake (state ready), and its worker's side."""
    node = wb.WireConnection(wb.NODE, epoch=3)
    worker = wb.WireConnection(wb.WORKER, epoch=3, worker_version=worker_version)
    node.receive_data(worker.send({"type": "hello", "name": "echo", "pid": 1}))
    assert isinstance(node.next_frame(), dict)
    initialize = {"type": "initialize", "attemptId": "a", "heartbeatMs": 1000,
                  "activation": {}, "options": {}}  # fmt: skip
    worker.receive_data(node.send(initialize))
    assert isinstance(worker.next_frame(), dict)
    node.receive_data(worker.send({"type": "initialized", "capabilities": [], "requestId": "i"}))
    assert isinstance(node.next_frame(), dict)
    return node, worker


def _outcome(node: wb.WireConnection, fast: bool, frame: dict[str, Any]) -> tuple[Any, ...]:
    """What writing `frame` gives (its line, or "refused") and the state after: by the hot
    path when `fast`, else by `send`."""
    line: bytes | None
    try:
        if not fast:
            line = node.send(frame)
        elif frame["type"] == "ack":
            line = node.ack(frame["through"])
        else:
            line = node.send_prompt(frame["turnId"], frame["text"], frame["requestId"])
    except wb.LocalProtocolError:
        return ("refused", node.state, node.sent_sequence, node.unacked_received)
    return (line, node.state, node.sent_sequence, node.unacked_received)


@given(turn_id=IDS, text=TEXTS, request_id=IDS)
def test_the_prompt_line_is_what_send_writes(turn_id: str, text: str, request_id: str) -> None:
    """Any turn ID, text and request ID (quotes, controls, non-ASCII, a lone surrogate, too
    long, empty): send_prompt gives send's bytes and state, or both refuse."""
    frame = {"type": "prompt", "requestId": request_id, "turnId": turn_id, "text": text}
    assert _outcome(_ready_node()[0], True, frame) == _outcome(_ready_node()[0], False, frame)


def test_a_prompt_out_of_turn_is_refused_as_send_refuses_it() -> None:
    """A second prompt while a turn runs is a local protocol error, and nothing is sent."""
    node, _ = _ready_node()
    node.send_prompt("turn_1", "hi", "turn_1")
    with pytest.raises(wb.LocalProtocolError):
        node.send_prompt("turn_2", "hi", "turn_2")
    assert node.sent_sequence == 2


def _after_events(events: int, version: str) -> wb.WireConnection:
    """A Node connection that received a turn's `events` deltas, none acknowledged yet,
    then told to name `version` as the worker's (the hello checks it; here anything goes)."""
    node, worker = _ready_node()
    worker.receive_data(node.send_prompt("turn_1", "hi", "turn_1"))
    assert isinstance(worker.next_frame(), dict)
    node.receive_data(b"".join(
        worker.send_event("turn_1", "message.delta", str(n), "turn_1") for n in range(events)
    ))  # fmt: skip
    while isinstance(node.next_frame(), dict):
        pass
    node.worker_version = version
    return node


@given(events=st.integers(1, 20), through_back=st.integers(0, 25), version=IDS)
def test_the_ack_line_is_what_send_writes(events: int, through_back: int, version: str) -> None:
    """After a turn's events, an ack through any point (in range or not, whatever the
    version it names) gives send's bytes and state, or both refuse; nothing awaiting an
    ack there, ack gives None."""
    fast, plain = _after_events(events, version), _after_events(events, version)
    frame = {"type": "ack", "through": fast.received_sequence - through_back}
    outcome = _outcome(fast, True, frame)
    if outcome[0] is None:
        assert through_back >= events  # the events all came after that point
        return
    assert outcome == _outcome(plain, False, frame)
