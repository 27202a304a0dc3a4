"""Codec property tests: every frame round-trips; hostile bytes only ever raise protocol errors."""

from __future__ import annotations

import contextlib
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import worker_bridge as wb

from ._strategies import FRAMES, any_frame


def _line(frame: dict[str, Any], **envelope: Any) -> bytes:
    wire = {
        "protocolVersion": wb.PROTOCOL_VERSION,
        "workerVersion": "1",
        "requestId": "r1",
        "sequence": 1,
        "epoch": 7,
        **frame,
        **envelope,
    }
    return json.dumps(wire).encode() + b"\n"


def _node() -> wb.WireConnection:
    return wb.WireConnection(wb.NODE, epoch=7)


def test_every_frame_type_has_a_strategy_and_a_class() -> None:
    """The schema table, the typed classes and the test strategies name the same 15 types."""
    assert set(wb.FRAMES) == set(wb.FRAME_CLASSES) == set(FRAMES)
    assert len(wb.FRAMES) == 15


def test_classes_mirror_the_schema_table() -> None:
    """Each attrs class has exactly its table row's payload fields plus request_id."""
    import attrs

    for name, spec in wb.FRAMES.items():
        attributes = {a.name for a in attrs.fields(wb.FRAME_CLASSES[name])}
        assert attributes == {f.attr for f in spec.fields} | {"request_id"}, name


@given(frame=any_frame, epoch=st.integers(0, 2**40))
def test_round_trip_of_every_frame(frame: wb.Frame, epoch: int) -> None:
    """encode → decode gives back the same frame, whichever side sends it."""
    senders = wb.FRAMES[frame.type].senders
    role = wb.WORKER if wb.WORKER in senders else wb.NODE
    wire = wb.frame_to_wire(frame)
    # The state table may refuse the frame out of context; the codec must not lose data.
    decoded = wb.frame_from_wire(wb.parse_untrusted(wb.encode(wire | {"requestId": "x"})))
    assert decoded == wb.frame_from_wire(wire | {"requestId": "x"})
    assert wb.frame_to_wire(decoded) == wire | {"requestId": "x"}
    sender = wb.WireConnection(role, epoch=epoch)
    key = "event.end" if wire.get("kind") in ("turn.completed", "turn.failed") else frame.type
    sender.state = next(s for (s, who, k) in wb.TRANSITIONS if who == role and k == key)
    if frame.type == "ack":  # an ack may not pass what was received
        sender._received_sequence = wire["through"]
    line = sender.send(wire)
    assert line.endswith(b"\n")
    assert line.count(b"\n") == 1
    parsed = wb.parse_untrusted(line[:-1])
    expected = wb.frame_from_wire(wire | {"requestId": parsed["requestId"]})
    assert wb.frame_from_wire(parsed) == expected
    receiver = wb.WireConnection(wb.NODE if role == wb.WORKER else wb.WORKER, epoch=epoch)
    receiver.state = next(s for (s, who, k) in wb.TRANSITIONS if who == role and k == key)
    receiver._sent_sequence = wire.get("through", 0)  # an ack may only cover what was sent
    receiver.receive_data(line)
    received = receiver.next_frame()
    assert isinstance(received, dict)
    assert wb.frame_from_wire(received) == expected


@settings(max_examples=300)
@given(data=st.binary(max_size=2000))
def test_random_bytes_raise_only_protocol_errors(data: bytes) -> None:
    """Arbitrary bytes give frames, NEED_DATA or a RemoteProtocolError, nothing else."""
    conn = _node()
    conn.receive_data(data)
    conn.receive_data(b"")
    try:
        for _ in range(100):
            if conn.next_frame() is wb.PEER_CLOSED:
                break
    except wb.RemoteProtocolError:
        assert conn.state is wb.State.ERROR


@given(frame=any_frame, cut=st.integers(0, 400), junk=st.binary(min_size=1, max_size=5))
def test_mutated_frames_raise_only_protocol_errors(frame: wb.Frame, cut: int, junk: bytes) -> None:
    """A valid line with bytes spliced in is accepted or refused as a protocol error."""
    line = _line(wb.frame_to_wire(frame))
    cut = min(cut, len(line) - 1)
    conn = _node()
    conn.receive_data(line[:cut] + junk + line[cut:])
    try:
        conn.next_frame()
        conn.next_frame()
    except wb.RemoteProtocolError:
        assert conn.state is wb.State.ERROR


@pytest.mark.parametrize(
    ("data", "needle"),
    [
        (b"\xff\xfe{}\n", "UTF-8"),
        (b'{"type": NaN}\n', "not valid JSON"),
        (b'{"type": Infinity}\n', "not valid JSON"),
        (b'{"type": "hello", "type": "hello"}\n', "duplicate key"),
        (b"[" * 100_000 + b"]" * 100_000 + b"\n", "nest"),
        (b"[]\n", "JSON object"),
        (b"\n", "empty line"),
        (b'{"a": 1} x\n', "bytes after"),
    ],
)
def test_hostile_json_is_a_remote_protocol_error(data: bytes, needle: str) -> None:
    """Invalid UTF-8, NaN, duplicate keys, depth 10^5 and non-objects are refused clearly."""
    conn = _node()
    conn.receive_data(data)
    with pytest.raises(wb.RemoteProtocolError, match=needle):
        conn.next_frame()
    assert conn.state is wb.State.ERROR
    with pytest.raises(wb.RemoteProtocolError):
        conn.next_frame()


def test_deep_nesting_inside_a_valid_frame_is_refused() -> None:
    """A free-form field nested past the depth bound is refused naming the field."""
    deep: Any = {}
    for _ in range(200):
        deep = {"a": deep}
    conn = _node()
    conn.receive_data(_line({"type": "hello", "name": "w", "pid": 1}))
    conn.next_frame()
    conn.receive_data(
        _line(
            {"type": "observation-batch", "records": [deep], "dropped": 0},
            sequence=2,
        )
    )
    with pytest.raises(wb.RemoteProtocolError, match="records") as info:
        conn.next_frame()
    assert info.value.frame == "observation-batch"
    assert info.value.field == "records"


def test_a_line_of_one_mib_plus_one_is_refused_before_its_newline() -> None:
    """1 MiB + 1 bytes without a newline is refused at once; exactly 1 MiB is only parsed."""
    conn = _node()
    conn.receive_data(b" " * (wb.MAX_FRAME_BYTES + 1))
    with pytest.raises(wb.RemoteProtocolError, match="exceeds"):
        conn.next_frame()
    splitter = wb.LineSplitter()
    splitter.feed(b"x" * wb.MAX_FRAME_BYTES + b"\n")
    assert splitter.next_line() == b"x" * wb.MAX_FRAME_BYTES


@given(chunks=st.lists(st.integers(1, 50), min_size=1, max_size=40))
def test_splitter_reassembles_lines_from_any_chunking(chunks: list[int]) -> None:
    """However the pipe splits the bytes, the same lines come out in order."""
    lines = [f"line-{i}-".encode() * (i % 7 + 1) for i in range(30)]
    data = b"".join(line + b"\n" for line in lines)
    splitter = wb.LineSplitter(max_line=200)
    out: list[bytes] = []
    offset = 0
    sizes = iter(chunks * (len(data) // max(1, sum(chunks)) + 1))
    while offset < len(data):
        size = next(sizes)
        splitter.feed(data[offset : offset + size])
        offset += size
        while (line := splitter.next_line()) is not None:
            out.append(line)
    assert out == lines


def test_splitter_scans_each_byte_once() -> None:
    """Feeding a long line byte by byte stays linear (the scan position only moves forward)."""
    splitter = wb.LineSplitter(max_line=200_000)
    for _ in range(100_000):
        splitter.feed(b"a")
        assert splitter.next_line() is None
    splitter.feed(b"\n")
    assert splitter.next_line() == b"a" * 100_000


def test_partial_line_at_end_of_stream_is_an_error() -> None:
    """A peer that closes mid-frame broke the protocol."""
    conn = _node()
    conn.receive_data(b'{"type":')
    conn.receive_data(b"")
    with pytest.raises(wb.RemoteProtocolError, match="ended inside a frame"):
        conn.next_frame()


@given(
    turn_id=st.text(min_size=1, max_size=40),
    kind=st.sampled_from(sorted(wb._schema.EVENT_KINDS)),
    text=st.none() | st.text(max_size=200),
)
def test_the_fast_event_path_writes_what_send_writes(
    turn_id: str, kind: str, text: str | None
) -> None:
    """send_event and send give the same frame (or both refuse it, as a local error)."""
    results: list[tuple[Any, wb.State, int] | None] = []
    for fast in (True, False):
        conn = wb.WireConnection(wb.WORKER, epoch=3, worker_version="v")
        conn.state = wb.State.TURN
        try:
            if fast:
                line = conn.send_event(turn_id, kind, text, "r")
            else:
                frame = {"type": "event", "turnId": turn_id, "kind": kind, "requestId": "r"}
                line = conn.send(frame if text is None else {**frame, "text": text})
        except wb.LocalProtocolError:
            results.append(None)
            continue
        results.append((wb.parse_untrusted(line[:-1]), conn.state, conn.unacked_sent))
    assert results[0] == results[1]


@given(order=st.permutations(list(range(1, 9))))
def test_out_of_order_sequences_are_refused_at_the_first_misplaced_frame(order: list[int]) -> None:
    """Frames delivered in any order: accepted while in sequence, then one protocol error."""
    lines = [_line({"type": "hello", "name": "w", "pid": 1}, sequence=1)] + [
        _line({"type": "heartbeat"}, sequence=n) for n in range(2, 9)
    ]
    conn = _node()
    conn.receive_data(b"".join(lines[n - 1] for n in order))
    expected_good = next((i for i, n in enumerate(order) if n != i + 1), len(order))
    accepted = 0
    refused = expected_good < len(order)
    with pytest.raises(wb.RemoteProtocolError) if refused else contextlib.nullcontext():
        while isinstance(conn.next_frame(), dict):
            accepted += 1
    assert accepted == expected_good
