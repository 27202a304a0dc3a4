"""The Execution Node's side of the link: enroll once, then connect out, say hello and send
a status every heartbeat interval, reconnecting with a bounded backoff.

With no `machine.json` in its home, the Node presents its enrollment token once (`enroll`)
and stores the credential it gets (0600); with one, the token is not used again (a
systemd unit may keep passing it). A refusal from Control (`unauthenticated`: revoked,
stale, recovery required, unknown) stops the link for good: the Node keeps running,
admits no machine work, and logs what to do (enroll it again). A lost connection is
retried after 0.5, 1, 2, then every 5 s. Every frame from Control is untrusted: one that
fails to parse is logged and counted, never acted on.

`wss://` needs the Control Node's certificate fingerprint, which the enrollment token
carries and `machine.json` keeps (`_tls`): a server presenting another certificate gets
nothing (not even the bearer) and is tried again with the same backoff, each time logged
naming both fingerprints. A wss:// address without a pin, or a pin with a ws:// address,
is refused for good (it would drop the pin or never have one).
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import attrs
import trio
from trio_websocket import (
    ConnectionClosed,
    ConnectionRejected,
    HandshakeError,
    WebSocketConnection,
)

from actors.machine import MachineTrace, split_token
from maia.core import Clock, MaiaError
from supervision.leases import HEARTBEAT_INTERVAL_MS, MachineLeaseReport, NodeStatus

from ._credential_file import MachineCredential, read_credential, write_credential
from ._exec_assignments import ExecutionAssignments
from ._frames import (
    MAX_FRAME_BYTES,
    TO_EXECUTION,
    EnrolledFrame,
    EnrollFrame,
    ErrorFrame,
    FenceFrame,
    HelloFrame,
    StatusFrame,
    WelcomeFrame,
    decode_frame,
    encode_frame,
)
from ._gate import ENROLL_PATH, FRAMES_HEADER, LINK_PATH, OPTIONAL_FRAMES
from ._outbox_store import OutboxStore
from ._tls import PinMismatch, open_link

log = logging.getLogger("maia.machines")
BACKOFF_S: Final = (0.5, 1.0, 2.0, 5.0)
CONNECT_TIMEOUT_S: Final = 10.0
ANSWER_TIMEOUT_S: Final = 10.0


class LinkRefused(Exception):
    """Control refused this machine: only a fresh enrollment helps."""


@attrs.define
class ExecutionState:
    """What the Execution Node knows of its link (for logs and tests)."""

    phase: str = "starting"  # starting, enrolling, connecting, connected, refused
    refusal: str | None = None
    connections: int = 0
    statuses_sent: int = 0
    frames_refused: int = 0
    control_epoch: int | None = None


def _bearer(secret: str) -> list[tuple[bytes, bytes]]:
    return [(b"Authorization", f"Bearer {secret}".encode())]


def _link_headers(secret: str) -> list[tuple[bytes, bytes]]:
    """The bearer and the optional frames this Node understands (`_gate.FRAMES_HEADER`)."""
    return [*_bearer(secret), (FRAMES_HEADER, ",".join(sorted(OPTIONAL_FRAMES)).encode())]


class ExecutionLink:
    """Runs the link until cancelled. `reports` gives the per-assignment reports to send;
    `on_frame` gets every well-formed frame from Control after `welcome`."""

    def __init__(self, home: Path, control_url: str, token: str | None, node_id: str,
                 clock: Clock, supervisor: Any = None,
                 store: OutboxStore | None = None) -> None:  # fmt: skip
        self.home = home
        self.store = store  # the evidence outbox, durable on the Node's SQLite
        self.control_url = control_url
        self.token: str | None = None
        self.pin: str | None = None  # the Control Node's certificate fingerprint (wss://)
        if token is not None:
            self.token, self.pin = split_token(token)
        self.node_id = node_id
        self.clock = clock
        self.supervisor = supervisor  # where relayed workers are spawned (the local one)
        self.state = ExecutionState()
        self.credential: MachineCredential | None = None
        self.assignments: ExecutionAssignments | None = None
        self.socket: WebSocketConnection | None = None
        # Increases across restarts too (Control ignores a status not above the last).
        self._sequence = clock.wall_ms()

    async def send(self, frame: object) -> bool:
        """Put a frame on the link; False while it is down (the lease machines retry)."""
        socket = self.socket
        if socket is None:
            return False
        try:
            await socket.send_message(encode_frame(frame))
        except ConnectionClosed:
            return False
        return True

    async def report_now(self) -> None:
        if self.socket is not None and self.credential is not None:
            with contextlib.suppress(ConnectionClosed):
                await self.send_status(self.socket, self.credential)

    def _reports(self) -> tuple[MachineLeaseReport, ...]:
        return () if self.assignments is None else self.assignments.reports()

    async def run(self, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        try:
            credential = await self._credential()
        except LinkRefused as refused:
            await self._refused(refused)
            return
        self.credential, self.pin = credential, credential.control_fingerprint
        trace = MachineTrace.from_env(self.clock)  # off unless a test asks (docs/machines.md)
        self.assignments = ExecutionAssignments(self.home, credential.machine_id, self.clock,
                                                self.supervisor, self.send, self.report_now,
                                                trace, self.store)  # fmt: skip
        async with trio.open_nursery() as nursery:
            await nursery.start(self.assignments.run)
            try:
                await self._keep_connected(credential)
            except LinkRefused as refused:
                await self._refused(refused)

    async def _refused(self, refused: LinkRefused) -> None:
        """Stay up, admit no machine work, say what to do; never retry a refusal."""
        self.state.phase, self.state.refusal = "refused", str(refused)
        log.error("machine link refused by %s: %s; admitting no machine work (enroll this"
                  " Node again: docs/machines.md)", self.control_url, refused)  # fmt: skip
        await trio.sleep_forever()

    async def _keep_connected(self, credential: MachineCredential) -> None:
        failures = 0
        while True:
            try:
                await self._connect(credential)
                failures = 0
            except (OSError, HandshakeError, ConnectionClosed, trio.TooSlowError,
                    PinMismatch) as error:  # fmt: skip
                delay = BACKOFF_S[min(failures, len(BACKOFF_S) - 1)]
                failures += 1
                self._lost(error, delay)
                await trio.sleep(delay)

    def _lost(self, error: BaseException, delay: float) -> None:
        if isinstance(error, PinMismatch):
            self.state.phase, self.state.refusal = "pin_mismatch", str(error)
            log.error("machine link to %s refused: %s; again in %.1f s", self.control_url,
                      error, delay)  # fmt: skip
            return
        self.state.phase = "connecting"
        log.info("machine link to %s lost (%s); again in %.1f s", self.control_url,
                 type(error).__name__, delay)  # fmt: skip

    async def _credential(self) -> MachineCredential:
        stored = read_credential(self.home)
        if stored is not None:
            return stored
        if self.token is None:
            raise LinkRefused("no machine credential in this home and no enrollment token")
        self._check_scheme()
        self.state.phase = "enrolling"
        failures = 0
        while True:
            try:
                credential = await self._enroll(self.token)
            except (OSError, HandshakeError, ConnectionClosed, trio.TooSlowError,
                    PinMismatch) as error:  # fmt: skip
                delay = BACKOFF_S[min(failures, len(BACKOFF_S) - 1)]
                failures += 1
                self._lost(error, delay)
                await trio.sleep(delay)
                continue
            write_credential(self.home, credential)
            log.info("enrolled as machine %s on Control Node %s", credential.name,
                     credential.control_node_id)  # fmt: skip
            return credential

    async def _enroll(self, token: str) -> MachineCredential:
        async with self._open(ENROLL_PATH, token) as socket:
            await socket.send_message(encode_frame(EnrollFrame("enroll", token, self.node_id)))
            with trio.fail_after(ANSWER_TIMEOUT_S):
                answer = self._decode(await socket.get_message())
            if not isinstance(answer, EnrolledFrame):
                raise LinkRefused(_why(answer))
            return MachineCredential(self.control_url, answer.control_node_id, answer.machine_id,
                                     answer.name, answer.credential, answer.incarnation,
                                     answer.credential_revision,
                                     answer.credential_revision,
                                     control_fingerprint=self.pin)  # fmt: skip

    def _check_scheme(self) -> None:
        """wss:// only with a pinned certificate, and a pin only over wss://."""
        secure = self.control_url.startswith("wss://")
        if secure and self.pin is None:
            raise LinkRefused(f"{self.control_url} is wss:// but no certificate fingerprint is"
                              " pinned: use a token from a Control Node listening with"
                              " --machines-cert")  # fmt: skip
        if not secure and self.pin is not None:
            raise LinkRefused(
                f"the enrollment pins the Control Node's certificate "
                f"{self.pin}: use wss:// in --control, not {self.control_url}"
            )

    def _open(self, path: str, secret: str) -> Any:
        headers = _link_headers(secret) if path == LINK_PATH else _bearer(secret)
        return open_link(self.control_url, path, headers, self.pin,
                         max_message_size=MAX_FRAME_BYTES,
                         connect_timeout=CONNECT_TIMEOUT_S)  # fmt: skip

    def _decode(self, message: str | bytes) -> Any:
        try:
            return decode_frame(message, TO_EXECUTION)
        except MaiaError as error:
            self.state.frames_refused += 1
            log.warning("a frame from the Control Node was refused: %s", error.message)
            return None

    async def _connect(self, credential: MachineCredential) -> None:
        self._check_scheme()
        self.state.phase = "connecting"
        try:
            async with self._open(LINK_PATH, credential.credential) as socket:
                live = () if self.assignments is None else self.assignments.live_attempts()
                hello = HelloFrame("hello", credential.incarnation, credential.credential_revision,
                                   credential.observed_revocation_revision, self.node_id,
                                   live)  # fmt: skip
                await socket.send_message(encode_frame(hello))
                with trio.fail_after(ANSWER_TIMEOUT_S):
                    answer = self._decode(await socket.get_message())
                if not isinstance(answer, WelcomeFrame):
                    raise LinkRefused(_why(answer))
                self.state.phase, self.state.control_epoch = "connected", answer.control_epoch
                self.state.connections += 1
                self.socket = socket
                if self.assignments is not None:  # before any record goes on this socket
                    self.assignments.link_opened()
                try:
                    async with trio.open_nursery() as nursery:
                        nursery.start_soon(self._beat, socket, credential)
                        if self.assignments is not None:
                            nursery.start_soon(self.assignments.resend)
                        await self._listen(socket)
                        nursery.cancel_scope.cancel()
                except BaseExceptionGroup as group:
                    raise _single(group) from None
                finally:
                    self.socket = None
        except ConnectionRejected as rejected:
            if rejected.status_code in (401, 403):
                raise LinkRefused(f"HTTP {rejected.status_code}") from None
            raise HandshakeError() from None

    async def _beat(self, socket: WebSocketConnection, credential: MachineCredential) -> None:
        while True:
            await self.send_status(socket, credential)
            await trio.sleep(HEARTBEAT_INTERVAL_MS / 1000)

    async def send_status(self, socket: WebSocketConnection,
                          credential: MachineCredential) -> None:  # fmt: skip
        self._sequence += 1
        status = NodeStatus(credential.machine_id, credential.incarnation, self._sequence,
                            self._reports())  # fmt: skip
        await socket.send_message(encode_frame(StatusFrame("status", status)))
        self.state.statuses_sent += 1

    async def _listen(self, socket: WebSocketConnection) -> None:
        while True:
            frame = self._decode(await socket.get_message())
            if frame is None:
                continue
            if isinstance(frame, ErrorFrame) and frame.code == "unauthenticated":
                raise LinkRefused(_why(frame))
            if isinstance(frame, FenceFrame):
                log.warning("the Control Node fenced this link: %s", frame.reason)
                return
            if self.assignments is not None:
                await self.assignments.on_frame(frame)


def _single(group: BaseExceptionGroup[BaseException]) -> BaseException:
    """The one expected failure of the beat/listen pair (a closed link, a refusal)."""
    leaves: list[BaseException] = list(_leaves(group))
    expected = (ConnectionClosed, LinkRefused, OSError, trio.TooSlowError)
    if leaves and all(isinstance(leaf, expected) for leaf in leaves):
        return leaves[0]
    return group


def _leaves(error: BaseException) -> Iterator[BaseException]:
    if isinstance(error, BaseExceptionGroup):
        for inner in error.exceptions:
            yield from _leaves(inner)
    else:
        yield error


def _why(answer: Any) -> str:
    if isinstance(answer, ErrorFrame):
        return f"{answer.code}: {answer.message}"
    return "the Control Node answered no welcome"
