"""The sans-IO connection on JSON objects: bytes in → checked frames out, frames in → bytes.

It owns the line splitter, the envelope (version, sequence per direction, epoch), the state
table, and the window of unacknowledged event frames. It does no I/O and reads no clock:
`receive_data(bytes)` (empty bytes = end of stream), `next_frame()` → frame, `NEED_DATA` or
`PEER_CLOSED`, `send(frame) -> bytes`. A peer's fault raises `RemoteProtocolError`, ours
`LocalProtocolError`; either leaves the connection in `State.ERROR`, where it accepts
nothing more (except sending one `error` frame, to tell the peer why).

Frames are plain dicts here so that workers (which must start fast) need only the stdlib;
`Connection` in `_connection` is the typed view the Node uses.
"""

from __future__ import annotations

import enum
from collections import deque

from ._errors import LocalProtocolError, ProtocolError, RemoteProtocolError
from ._json import encode, encode_string, parse_untrusted
from ._limits import MAX_FRAME_BYTES, MAX_UNACKED_EVENTS, PROTOCOL_VERSION
from ._schema import FRAMES, NODE, TURN_END_KINDS, WORKER, check_payload
from ._splitter import LineSplitter
from ._state import TRANSITIONS, State

# typing costs a worker ~20 ms of start-up: import it for the type checker only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, Final


MAX_VERSION_CHARS: Final = 64


class Signal(enum.Enum):
    """What `next_frame` returns when it has no frame."""

    NEED_DATA = "need-data"
    PEER_CLOSED = "peer-closed"


NEED_DATA: Final = Signal.NEED_DATA
PEER_CLOSED: Final = Signal.PEER_CLOSED


def _key_type(frame: dict[str, Any]) -> str:
    kind = frame["type"]
    if kind == "event" and frame.get("kind") in TURN_END_KINDS:
        return "event.end"
    return str(kind)


def _parse(line: bytes, max_bytes: int) -> Any:
    return parse_untrusted(line, max_bytes=max_bytes)


class WireConnection:
    """One side (`"worker"` or `"node"`) of one attempt's conversation, at epoch `epoch`."""

    def __init__(
        self,
        role: str,
        *,
        epoch: int,
        worker_version: str = "",
        max_frame: int = MAX_FRAME_BYTES,
        max_unacked: int = MAX_UNACKED_EVENTS,
        encoder: Callable[[Any], bytes] = encode,
        decoder: Callable[[bytes, int], Any] | None = None,
    ) -> None:
        if role not in (WORKER, NODE):
            raise ValueError(f"role must be {WORKER!r} or {NODE!r}")
        self.role = role
        self.peer = NODE if role == WORKER else WORKER
        self.epoch = epoch
        self.worker_version = worker_version
        self.state = State.AWAIT_HELLO
        self._splitter = LineSplitter(max_frame)
        self._max_frame = max_frame
        self._max_unacked = max_unacked
        self._sent_sequence = 0
        self._received_sequence = 0
        self._sent_events: deque[int] = deque()  # our event sequences the peer has not acked
        self._received_events: deque[int] = deque()  # the peer's event sequences we have not acked
        self._peer_acked = 0
        self._we_acked = 0
        self.error: ProtocolError | None = None
        # The frames' JSON encoder: the stdlib one here; the Node passes a faster one that
        # writes the same bytes (`supervision._worker_json`).
        self._encode = encoder
        # And their decoder: `parse_untrusted` here; the Node passes one that gives its value
        # faster for a line in orjson's own form (`supervision._worker_json`).
        self._decode = decoder or _parse

    # -- receiving ---------------------------------------------------------------------

    def receive_data(self, data: bytes) -> None:
        """Give bytes read from the peer; empty bytes mean the peer closed its end."""
        self._splitter.feed(data)

    def next_frame(self) -> dict[str, Any] | Signal:
        """The next checked frame, `NEED_DATA`, or `PEER_CLOSED` after the last frame.

        Raises `RemoteProtocolError` naming the frame and field the peer got wrong.
        """
        if self.state is State.ERROR:
            raise RemoteProtocolError("the connection already failed") from self.error
        try:
            line = self._splitter.next_line()
            if line is None:
                return PEER_CLOSED if self._splitter.at_eof else NEED_DATA
            if not line.strip():
                raise RemoteProtocolError("an empty line is not a frame")
            frame = self._decode(line, self._max_frame)
            self._accept(frame)
            return frame  # type: ignore[no-any-return]
        except RemoteProtocolError as exc:
            self._fail(exc)
            raise

    def _accept(self, frame: Any) -> None:
        if not isinstance(frame, dict):
            raise RemoteProtocolError("a frame must be a JSON object")
        kind = frame.get("type")
        where = str(kind)[:40]
        problem = check_payload(frame)
        if problem is not None:
            field = problem.split(":", 1)[0]
            raise RemoteProtocolError(f"{where} frame: {problem}", frame=where, field=field)
        for name in ("protocolVersion", "workerVersion", "requestId", "sequence", "epoch"):
            if name not in frame:
                raise RemoteProtocolError(
                    f"{where} frame: {name}: required", frame=where, field=name
                )
        if frame["protocolVersion"] != PROTOCOL_VERSION:
            raise RemoteProtocolError(
                f"{where} frame: protocolVersion: {str(frame['protocolVersion'])[:20]} is not "
                f"{PROTOCOL_VERSION}",
                frame=where,
                field="protocolVersion",
            )
        version = frame["workerVersion"]
        if not isinstance(version, str) or len(version) > MAX_VERSION_CHARS:
            raise RemoteProtocolError(
                f"{where} frame: workerVersion: must be a string of at most "
                f"{MAX_VERSION_CHARS} characters",
                frame=where,
                field="workerVersion",
            )
        request_id = frame["requestId"]
        if not isinstance(request_id, str) or not 0 < len(request_id) <= 128:
            raise RemoteProtocolError(
                f"{where} frame: requestId: must be a string of 1..128 characters",
                frame=where,
                field="requestId",
            )
        epoch = frame["epoch"]
        if type(epoch) is not int or epoch != self.epoch:
            if type(epoch) is int and epoch < self.epoch:
                why = f"{epoch} is older than this attempt's epoch {self.epoch}"
            else:
                why = f"{str(epoch)[:24]} is not this attempt's epoch {self.epoch}"
            raise RemoteProtocolError(f"{where} frame: epoch: {why}", frame=where, field="epoch")
        sequence = frame["sequence"]
        if type(sequence) is not int or sequence != self._received_sequence + 1:
            raise RemoteProtocolError(
                f"{where} frame: sequence: {str(sequence)[:24]} is not the next "
                f"({self._received_sequence + 1})",
                frame=where,
                field="sequence",
            )
        if self.peer not in FRAMES[str(kind)].senders:
            raise RemoteProtocolError(
                f"{where} frame: a {self.peer} may not send it", frame=where, field="type"
            )
        if kind == "hello":
            self.worker_version = version
        elif self.role == NODE and version != self.worker_version:
            raise RemoteProtocolError(
                f"{where} frame: workerVersion: changed from {self.worker_version!r}",
                frame=where,
                field="workerVersion",
            )
        self.state = self._transition(self.peer, frame, RemoteProtocolError)
        self._received_sequence = sequence
        if kind == "event":
            self._received_events.append(sequence)
            if len(self._received_events) > self._max_unacked:
                raise RemoteProtocolError(
                    f"event frame: more than {self._max_unacked} unacknowledged event frames",
                    frame="event",
                    field="sequence",
                )
        elif kind == "ack":
            self._take_ack(frame["through"])

    def _take_ack(self, through: int) -> None:
        if through < self._peer_acked or through > self._sent_sequence:
            raise RemoteProtocolError(
                f"ack frame: through: {through} is outside {self._peer_acked}.."
                f"{self._sent_sequence}",
                frame="ack",
                field="through",
            )
        self._peer_acked = through
        while self._sent_events and self._sent_events[0] <= through:
            self._sent_events.popleft()

    def _transition(self, sender: str, frame: dict[str, Any], error: type[ProtocolError]) -> State:
        key = _key_type(frame)
        following = TRANSITIONS.get((self.state, sender, key))
        if following is None:
            raise error(
                f"{frame['type']} frame: a {sender} may not send it in state {self.state.value}",
                frame=str(frame["type"]),
                field="type",
            )
        return following

    def _fail(self, exc: ProtocolError) -> None:
        self.state = State.ERROR
        self.error = exc

    # -- sending -----------------------------------------------------------------------

    def send(self, frame: dict[str, Any]) -> bytes:
        """Stamp the envelope on `frame` (type and payload, optionally `requestId`) and
        return its line. Raises `LocalProtocolError` if the protocol forbids sending it
        now (including a full event window: wait for an ack)."""
        kind = frame.get("type")
        if self.state is State.ERROR and kind != "error":
            raise LocalProtocolError("the connection already failed") from self.error
        spec = FRAMES.get(kind) if isinstance(kind, str) else None
        if spec is None or self.role not in spec.senders:
            raise LocalProtocolError(f"a {self.role} may not send a {kind!r} frame")
        if kind == "event" and len(self._sent_events) >= self._max_unacked:
            raise LocalProtocolError(
                f"event frame: {self._max_unacked} event frames await an ack", frame="event"
            )
        sequence = self._sent_sequence + 1
        wire = {
            **frame,
            "protocolVersion": PROTOCOL_VERSION,
            "workerVersion": self.worker_version,
            "requestId": frame.get("requestId") or f"{self.role[0]}{sequence}",
            "sequence": sequence,
            "epoch": self.epoch,
        }
        problem = check_payload(wire)
        if problem is not None:
            raise LocalProtocolError(f"{kind} frame: {problem}", frame=str(kind))
        if self.state is not State.ERROR:
            following = self._transition(self.role, wire, LocalProtocolError)
        else:
            following = State.ERROR
        if kind == "ack":
            through = wire["through"]
            if through < self._we_acked or through > self._received_sequence:
                raise LocalProtocolError(
                    f"ack frame: through {through} is outside {self._we_acked}.."
                    f"{self._received_sequence}",
                    frame="ack",
                )
        try:
            line = self._encode(wire) + b"\n"
        except (TypeError, ValueError) as exc:
            raise LocalProtocolError(f"{kind} frame: not JSON: {exc}", frame=str(kind)) from None
        if len(line) > self._max_frame + 1:
            raise LocalProtocolError(
                f"{kind} frame: {len(line) - 1} bytes exceed {self._max_frame}", frame=str(kind)
            )
        self.state = following
        self._sent_sequence = sequence
        if kind == "event":
            self._sent_events.append(sequence)
        elif kind == "ack":
            self._we_acked = wire["through"]
            while self._received_events and self._received_events[0] <= self._we_acked:
                self._received_events.popleft()
        return line

    def send_event(
        self, turn_id: str, kind: str, text: str | None = None, request_id: str = ""
    ) -> bytes:
        """`send` for the hot path of a streaming worker: an `event` frame without `data`,
        checked by the same field rules, written without building a dict (the same bytes
        `send` would give, up to key order). Raises `LocalProtocolError`."""
        if self.state is State.ERROR or self.role != WORKER:
            raise LocalProtocolError(f"a {self.role} may not send an event frame now")
        if len(self._sent_events) >= self._max_unacked:
            raise LocalProtocolError(
                f"event frame: {self._max_unacked} event frames await an ack", frame="event"
            )
        spec = FRAMES["event"].fields
        for field, value in ((spec[0], turn_id), (spec[1], kind), (spec[2], text)):
            if value is not None and (problem := field.check(value)) is not None:
                raise LocalProtocolError(f"event frame: {field.wire}: {problem}", frame="event")
        key = "event.end" if kind in TURN_END_KINDS else "event"
        following = TRANSITIONS.get((self.state, WORKER, key))
        if following is None:
            raise LocalProtocolError(
                f"event frame: a worker may not send it in state {self.state.value}",
                frame="event",
            )
        sequence = self._sent_sequence + 1
        text_ = (
            f'{{"type":"event","turnId":{encode_string(turn_id)},"kind":{encode_string(kind)},'
            + (f'"text":{encode_string(text)},' if text is not None else "")
            + f'"protocolVersion":{PROTOCOL_VERSION},'
            f'"workerVersion":{encode_string(self.worker_version)},'
            f'"requestId":{encode_string(request_id or f"w{sequence}")},'
            f'"sequence":{sequence},"epoch":{self.epoch}}}\n'
        )
        try:
            line = text_.encode("utf-8")
        except UnicodeEncodeError as exc:
            raise LocalProtocolError(f"event frame: not UTF-8: {exc}", frame="event") from None
        self.state = following
        self._sent_sequence = sequence
        self._sent_events.append(sequence)
        return line

    def ack(self, through: int | None = None) -> bytes | None:
        """An `ack` through sequence `through` (default: everything received), or None when
        no event up to there awaits one. Ack only what you have consumed: acking events
        still queued lets the peer send past your buffer."""
        through = self._received_sequence if through is None else through
        if not self._received_events or self._received_events[0] > through:
            return None
        following = TRANSITIONS.get((self.state, self.role, "ack"))
        if following is None or not self._we_acked <= through <= self._received_sequence:
            return self.send({"type": "ack", "through": through})  # raises what is wrong
        # the hot path: the bytes `send` writes for this ack, without its dict and checks
        sequence = self._sent_sequence + 1
        try:
            line = (
                f'{{"type":"ack","through":{through},"protocolVersion":{PROTOCOL_VERSION},'
                f'"workerVersion":{encode_string(self.worker_version)},'
                f'"requestId":"{self.role[0]}{sequence}","sequence":{sequence},'
                f'"epoch":{self.epoch}}}\n'
            ).encode()
        except UnicodeEncodeError:  # a version no encoder can write: `send` says so
            return self.send({"type": "ack", "through": through})
        self.state = following
        self._sent_sequence = sequence
        self._we_acked = through
        while self._received_events and self._received_events[0] <= through:
            self._received_events.popleft()
        return line

    def send_prompt(self, turn_id: str, text: str, request_id: str) -> bytes:
        """`send` for the Node's hot path: a `prompt` frame with its text inline (no
        artifact) and a `requestId`, checked by the same field rules, written without
        building a dict: the bytes `send` gives for the same frame. Raises
        `LocalProtocolError`."""
        following = TRANSITIONS.get((self.state, self.role, "prompt"))
        spec = FRAMES["prompt"].fields
        if following is None or not request_id or self.role != NODE:
            return self.send(
                {"type": "prompt", "requestId": request_id, "turnId": turn_id, "text": text}
            )
        for field, value in ((spec[0], turn_id), (spec[1], text)):
            if (problem := field.check(value)) is not None:
                raise LocalProtocolError(f"prompt frame: {field.wire}: {problem}", frame="prompt")
        sequence = self._sent_sequence + 1
        try:
            line = (
                f'{{"type":"prompt","requestId":{encode_string(request_id)},'
                f'"turnId":{encode_string(turn_id)},"text":{encode_string(text)},'
                f'"protocolVersion":{PROTOCOL_VERSION},'
                f'"workerVersion":{encode_string(self.worker_version)},'
                f'"sequence":{sequence},"epoch":{self.epoch}}}\n'
            ).encode()
        except UnicodeEncodeError as exc:
            raise LocalProtocolError(f"prompt frame: not JSON: {exc}", frame="prompt") from None
        if len(line) > self._max_frame + 1:
            raise LocalProtocolError(
                f"prompt frame: {len(line) - 1} bytes exceed {self._max_frame}", frame="prompt"
            )
        self.state = following
        self._sent_sequence = sequence
        return line

    # -- inspection --------------------------------------------------------------------

    @property
    def window_open(self) -> bool:
        """Whether an `event` frame may be sent now (fewer than the limit await an ack)."""
        return len(self._sent_events) < self._max_unacked

    @property
    def unacked_sent(self) -> int:
        return len(self._sent_events)

    @property
    def unacked_received(self) -> int:
        return len(self._received_events)

    @property
    def sent_sequence(self) -> int:
        return self._sent_sequence

    @property
    def received_sequence(self) -> int:
        return self._received_sequence
