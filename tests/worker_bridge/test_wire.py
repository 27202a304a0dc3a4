"""The sans-IO connection: state table, sequences, epochs, the ack window, errors by fault."""

from __future__ import annotations

from typing import Any

import pytest

import worker_bridge as wb


class Pair:
    """A worker and a Node connection wired back to back (h11's ConnectionPair)."""

    def __init__(self, epoch: int = 5, max_unacked: int = wb.MAX_UNACKED_EVENTS) -> None:
        self.worker = wb.WireConnection(
            wb.WORKER, epoch=epoch, worker_version="9.9", max_unacked=max_unacked
        )
        self.node = wb.WireConnection(wb.NODE, epoch=epoch, max_unacked=max_unacked)

    def w(self, frame: dict[str, Any]) -> dict[str, Any]:
        self.node.receive_data(self.worker.send(frame))
        got = self.node.next_frame()
        assert isinstance(got, dict)
        return got

    def n(self, frame: dict[str, Any]) -> dict[str, Any]:
        self.worker.receive_data(self.node.send(frame))
        got = self.worker.next_frame()
        assert isinstance(got, dict)
        return got

    def states(self) -> tuple[wb.State, wb.State]:
        return self.node.state, self.worker.state

    def ready(self) -> Pair:
        self.w({"type": "hello", "name": "t", "pid": 1})
        self.n(
            {
                "type": "initialize",
                "attemptId": "a",
                "heartbeatMs": 5000,
                "activation": {},
                "options": {},
            }
        )
        self.w({"type": "initialized", "capabilities": []})
        return self


def test_handshake_then_a_turn_reaches_ready_on_both_sides() -> None:
    """hello → initialize → initialized → prompt → events → completed leaves both READY."""
    pair = Pair().ready()
    assert pair.states() == (wb.State.READY, wb.State.READY)
    assert pair.node.worker_version == "9.9"
    pair.n({"type": "prompt", "turnId": "t1", "text": "hi"})
    assert pair.states() == (wb.State.TURN, wb.State.TURN)
    pair.w({"type": "event", "turnId": "t1", "kind": "message.delta", "text": "h"})
    pair.w({"type": "event", "turnId": "t1", "kind": "turn.completed", "text": "hi"})
    assert pair.states() == (wb.State.READY, wb.State.READY)


def test_every_state_and_frame_pair_is_decided_by_the_table() -> None:
    """Walking every (state, sender, type) pair: the table's answer is what send() does."""
    for state in wb.State:
        for type_, spec in wb.FRAMES.items():
            for role in spec.senders:
                conn = wb.WireConnection(role, epoch=0)
                conn.state = state
                key_type = "event" if type_ == "event" else type_
                allowed = (state, role, key_type) in wb.TRANSITIONS
                frame = {"type": type_, **_minimal(type_)}
                if state is wb.State.ERROR:
                    allowed = type_ == "error"
                if allowed:
                    conn.send(frame)
                else:
                    with pytest.raises(wb.LocalProtocolError):
                        conn.send(frame)


def _minimal(type_: str) -> dict[str, Any]:
    values = {
        "name": "n",
        "pid": 1,
        "attemptId": "a",
        "heartbeatMs": 1,
        "activation": {},
        "options": {},
        "capabilities": [],
        "turnId": "t",
        "text": "x",
        "kind": "message.delta",
        "callId": "c",
        "arguments": {},
        "ok": True,
        "content": "",
        "records": [],
        "dropped": 0,
        "reason": "r",
        "code": "c",
        "message": "m",
        "through": 0,
    }
    return {f.wire: values[f.wire] for f in wb.FRAMES[type_].fields if f.required}


def test_no_prompt_before_initialized_and_no_second_prompt_in_a_turn() -> None:
    """The Node may not prompt early or run two turns at once: a local error (our bug)."""
    pair = Pair()
    pair.w({"type": "hello", "name": "t", "pid": 1})
    with pytest.raises(wb.LocalProtocolError, match="await-initialize"):
        pair.node.send({"type": "prompt", "turnId": "t", "text": "x"})
    pair = Pair().ready()
    pair.n({"type": "prompt", "turnId": "t1", "text": "x"})
    with pytest.raises(wb.LocalProtocolError, match="state turn"):
        pair.node.send({"type": "prompt", "turnId": "t2", "text": "x"})


def test_interrupt_crossing_a_finished_turn_is_accepted_on_both_sides() -> None:
    """The worker completes while the Node interrupts: neither side calls it an error."""
    pair = Pair().ready()
    pair.n({"type": "prompt", "turnId": "t1", "text": "x"})
    done = pair.worker.send({"type": "event", "turnId": "t1", "kind": "turn.completed"})
    interrupt = pair.node.send({"type": "interrupt", "turnId": "t1"})
    pair.node.receive_data(done)
    pair.worker.receive_data(interrupt)
    assert isinstance(pair.node.next_frame(), dict)
    assert isinstance(pair.worker.next_frame(), dict)
    assert pair.node.state is pair.worker.state is wb.State.READY


def test_frames_of_an_old_epoch_are_refused() -> None:
    """A frame stamped with an earlier attempt's epoch is a remote error naming the epoch."""
    stale = wb.WireConnection(wb.WORKER, epoch=4)
    node = wb.WireConnection(wb.NODE, epoch=5)
    node.receive_data(stale.send({"type": "hello", "name": "t", "pid": 1}))
    with pytest.raises(wb.RemoteProtocolError, match="older than this attempt's epoch 5") as info:
        node.next_frame()
    assert info.value.field == "epoch"
    assert node.state is wb.State.ERROR


def test_out_of_order_sequence_is_refused() -> None:
    """A skipped or repeated sequence number is a remote error."""
    pair = Pair()
    line = pair.worker.send({"type": "hello", "name": "t", "pid": 1})
    pair.node.receive_data(line + line)
    pair.node.next_frame()
    with pytest.raises(wb.RemoteProtocolError, match="sequence: 1 is not the next"):
        pair.node.next_frame()


@pytest.mark.parametrize(
    ("change", "needle"),
    [
        ({"protocolVersion": 1}, "protocolVersion"),
        ({"surprise": 1}, "surprise: unknown field"),
        (
            {"type": "prompt", "turnId": "t", "text": "x", "name": None, "pid": None},
            "a worker may not send it",
        ),
        ({"type": "bogus"}, "not a frame type"),
        ({"pid": -1}, "pid: must be a non-negative"),
        ({"requestId": ""}, "requestId"),
    ],
)
def test_bad_envelopes_and_fields_name_the_field(change: dict[str, Any], needle: str) -> None:
    """Each refusal names the frame and the field that was wrong."""
    import json

    frame = {
        "type": "hello",
        "name": "t",
        "pid": 1,
        "protocolVersion": 2,
        "workerVersion": "",
        "requestId": "r",
        "sequence": 1,
        "epoch": 0,
        **change,
    }
    frame = {key: value for key, value in frame.items() if value is not None}
    node = wb.WireConnection(wb.NODE, epoch=0)
    node.receive_data(json.dumps(frame).encode() + b"\n")
    with pytest.raises(wb.RemoteProtocolError, match=needle):
        node.next_frame()


def test_content_limits_are_enforced_both_ways() -> None:
    """16 KiB of message content passes, one byte more is refused when sent and received."""
    pair = Pair().ready()
    pair.n({"type": "prompt", "turnId": "t", "text": "é" * (wb.MAX_CONTENT_BYTES // 2)})
    with pytest.raises(wb.LocalProtocolError, match="text: exceeds 16384 bytes"):
        pair.worker.send(
            {
                "type": "event",
                "turnId": "t",
                "kind": "message.delta",
                "text": "x" * (wb.MAX_CONTENT_BYTES + 1),
            }
        )


def test_sender_waits_for_a_cumulative_ack_after_the_window() -> None:
    """After 256 unacked event frames the worker may not send a 257th until the Node acks."""
    pair = Pair().ready()
    pair.n({"type": "prompt", "turnId": "t", "text": "x"})
    for _ in range(wb.MAX_UNACKED_EVENTS):
        pair.w({"type": "event", "turnId": "t", "kind": "message.delta", "text": "d"})
    assert pair.worker.unacked_sent == wb.MAX_UNACKED_EVENTS
    with pytest.raises(wb.LocalProtocolError, match="await an ack"):
        pair.worker.send({"type": "event", "turnId": "t", "kind": "message.delta"})
    ack = pair.node.ack()
    assert ack is not None
    assert pair.node.unacked_received == 0
    pair.worker.receive_data(ack)
    pair.worker.next_frame()
    assert pair.worker.window_open
    assert pair.worker.unacked_sent == 0


def test_a_peer_ignoring_the_window_is_a_remote_error() -> None:
    """The Node refuses the 257th unacked event from a worker that ignored back-pressure."""
    fresh = Pair(max_unacked=300).ready()
    fresh.node._max_unacked = wb.MAX_UNACKED_EVENTS  # the Node keeps the real limit
    fresh.n({"type": "prompt", "turnId": "t", "text": "x"})
    for _ in range(wb.MAX_UNACKED_EVENTS):
        fresh.w({"type": "event", "turnId": "t", "kind": "message.delta"})
    fresh.node.receive_data(
        fresh.worker.send({"type": "event", "turnId": "t", "kind": "message.delta"})
    )
    with pytest.raises(wb.RemoteProtocolError, match="unacknowledged"):
        fresh.node.next_frame()


def test_an_ack_beyond_what_was_sent_is_refused() -> None:
    """A cumulative ack through a sequence never sent is the peer's fault."""
    pair = Pair().ready()
    pair.node._received_sequence = 99  # pretend, to build a lying ack
    pair.node._received_events.append(99)
    lie = pair.node.send({"type": "ack", "through": 99})
    pair.worker.receive_data(lie)
    with pytest.raises(wb.RemoteProtocolError, match="through: 99 is outside"):
        pair.worker.next_frame()


def test_after_an_error_only_an_error_frame_may_be_sent() -> None:
    """ERROR accepts nothing more, except telling the peer why."""
    node = wb.WireConnection(wb.NODE, epoch=0)
    node.receive_data(b"garbage\n")
    with pytest.raises(wb.RemoteProtocolError):
        node.next_frame()
    with pytest.raises(wb.LocalProtocolError):
        node.send({"type": "shutdown", "reason": "x"})
    assert node.send({"type": "error", "code": "protocol", "message": "bad"}).endswith(b"\n")
