"""The Control Node's machine listener: Execution Nodes connect in, enroll, authenticate and
report; each link is one task, and nothing a peer sends ends more than its own link.

`/machines/v1/enroll`: the first frame is `enroll` with the bearer token; the answer is
`enrolled` with the credential, and the link closes. `/machines/v1`: the first frame is
`hello`; the credential (the bearer) is judged by the MN0 registration rules; refused, the
peer gets an `error` frame naming the reason and the link closes; admitted, `welcome`, and
from then on `status` frames (every `HEARTBEAT_INTERVAL_MS`). A frame that fails to parse,
names another machine or incarnation, or repeats an old reportSequence is answered with an
`error` frame and changes nothing; past `MAX_REFUSED_FRAMES` the link is fenced. A link
silent for `HEARTBEAT_MISSES` intervals is closed (the Execution Node reconnects).

Every `ack` that goes out is noted (`AckLedger`, across a machine's links): a `turn_event`
at or below what was acknowledged is a copy the Execution Node sent again after a
reconnect; it is answered with that `ack` again (the first may be what was lost) and
never reaches the relay, so it is not stored twice.
"""

from __future__ import annotations

import logging
from typing import Any, Final

import trio
from trio_websocket import ConnectionClosed, WebSocketConnection, WebSocketRequest

from actors.machine import (
    AckFrame,
    AckLedger,
    Credential,
    LinkState,
    MachineRecord,
    MachineService,
    TurnEventFrame,
    authenticate_write,
    redeem_write,
    set_listener_fingerprint,
    touch_machine,
)
from maia.core import Clock, MaiaError
from maia.node._websocket import GuardedServer
from storage import Storage
from supervision.leases import HEARTBEAT_INTERVAL_MS, HEARTBEAT_MISSES

from ._frames import (
    MAX_FRAME_BYTES,
    TO_CONTROL,
    EnrolledFrame,
    EnrollFrame,
    FenceFrame,
    HelloFrame,
    LeaseRequestFrame,
    RefusedFrame,
    StatusFrame,
    WelcomeFrame,
    decode_frame,
    encode_frame,
    error_frame,
)
from ._gate import Admitted, check_machine_upgrade
from ._tls import ListenerTls

log = logging.getLogger("maia.machines")
MAX_LINKS: Final = 128
FIRST_FRAME_S: Final = 10.0
MAX_REFUSED_FRAMES: Final = 64
TOUCH_EVERY_MS: Final = 30_000
SILENCE_S: Final = HEARTBEAT_INTERVAL_MS * HEARTBEAT_MISSES / 1000


class MachineListener:
    """Serves the machine link on `host:port`. Start with `nursery.start(listener.serve)`."""

    def __init__(self, store: Storage, machines: MachineService, clock: Clock) -> None:
        self._store = store
        self._machines = machines
        self._clock = clock
        self._server: GuardedServer | None = None
        self.relay = machines.relay
        self.acks = AckLedger()  # what each source's acks covered (for copies sent again)

    async def serve(self, host: str, port: int, tls: ListenerTls | None = None, *,
                    task_status: Any = trio.TASK_STATUS_IGNORED) -> None:  # fmt: skip
        """Serve ws://, or wss:// with `tls` (whose fingerprint tokens then carry)."""
        fingerprint = None if tls is None else tls.fingerprint
        await self._store.write(lambda c: set_listener_fingerprint(c, fingerprint))
        listeners: list[Any] = await trio.open_tcp_listeners(port, host=host)
        if tls is not None:
            listeners = [trio.SSLListener(listener, tls.context, https_compatible=True)
                         for listener in listeners]  # fmt: skip
        server = GuardedServer(self._handle, listeners, max_connections=MAX_LINKS,
                               max_message_size=MAX_FRAME_BYTES, connect_timeout=10,
                               disconnect_timeout=2)  # fmt: skip
        self._server = server
        async with trio.open_nursery() as nursery:
            await nursery.start(server.run)
            task_status.started(server.port)

    async def _handle(self, request: WebSocketRequest) -> None:
        verdict = check_machine_upgrade(request.path, request.headers)
        if not isinstance(verdict, Admitted):
            json_type = [(b"Content-Type", b"application/json")]
            await request.reject(verdict.status, body=verdict.body(), extra_headers=json_type)
            return
        socket = await request.accept()
        try:
            with trio.move_on_after(FIRST_FRAME_S) as waited:
                first = await socket.get_message()
            if waited.cancelled_caught:
                late = MaiaError(
                    "deadline_exceeded",
                    f"no first frame within {FIRST_FRAME_S} s",
                    {"method": "hello", "ms": int(FIRST_FRAME_S * 1000)},
                )
                await _refuse(socket, late)
                return
            if verdict.enroll:
                await self._enroll(socket, verdict.secret, first)
            else:
                await self._link(socket, verdict.secret, first, verdict.frames)
        except ConnectionClosed:
            pass

    async def _enroll(self, socket: WebSocketConnection, token: str, first: str | bytes) -> None:
        try:
            frame = decode_frame(first, {"enroll": EnrollFrame})
            if frame.token != token:
                raise MaiaError("unauthenticated", "the enroll frame's token is not the bearer",
                                {"reason": "token_mismatch"})  # fmt: skip
            now = self._clock.wall_ms()
            record, credential = await self._store.write(
                lambda c: redeem_write(c, token, frame.node_id, now)
            )
        except MaiaError as error:
            await _refuse(socket, error)
            return
        log.info("machine %s enrolled (incarnation %d)", record.name, record.incarnation)
        await socket.send_message(encode_frame(EnrolledFrame(
            "enrolled", record.machine_id, record.name, credential, record.incarnation,
            record.revocation_revision, self._store.node_id)))  # fmt: skip
        with trio.move_on_after(5):  # the client closes first: its socket is then released
            await socket.get_message()
        await socket.aclose()

    async def _link(self, socket: WebSocketConnection, secret: str, first: str | bytes,
                    frames: frozenset[str] = frozenset()) -> None:  # fmt: skip
        try:
            hello = decode_frame(first, {"hello": HelloFrame})
        except MaiaError as error:
            await _refuse(socket, error)
            return
        presented = Credential(secret, hello.incarnation, hello.credential_revision,
                               hello.observed_revocation_revision)  # fmt: skip
        now = self._clock.wall_ms()
        record, refusal = await self._store.write(lambda c: authenticate_write(c, presented, now))
        if record is None:
            assert refusal is not None
            log.warning("machine link refused: %s", refusal.message)
            await _refuse(socket, refusal)
            return
        self.relay.leases.set_registration(record.registration)  # a fresh incarnation, too
        lock = trio.Lock()

        async def send(frame: object) -> None:
            async with lock:  # the relay's tasks and this link's answers share the socket
                await socket.send_message(encode_frame(frame))
            if isinstance(frame, AckFrame):
                self.acks.stored(frame.source_id, frame.through)

        with trio.CancelScope() as scope:  # cancelled by a revoke or a newer link
            link = self._machines.links.open(record.machine_id, scope.cancel, send, frames)
            self.relay.link_opened(link)
            try:
                await socket.send_message(encode_frame(WelcomeFrame(
                    "welcome", record.machine_id, self._store.node_id, self._store.node_epoch,
                    HEARTBEAT_INTERVAL_MS)))  # fmt: skip
                log.info("machine %s connected", record.name)
                await self.relay.on_hello(record.machine_id, hello.attempts)
                await self._receive(socket, record, link, send)
            finally:
                self._machines.links.drop(link, self._clock.monotonic_ms())
        await socket.aclose()

    async def _receive(self, socket: WebSocketConnection, record: MachineRecord,
                       link: LinkState, send: Any) -> None:  # fmt: skip
        touched = self._clock.monotonic_ms()
        while True:
            with trio.move_on_after(SILENCE_S) as waited:
                message = await socket.get_message()
            if waited.cancelled_caught:
                log.warning("machine %s: silent for %.0f s, link closed", record.name, SILENCE_S)
                return
            try:
                frame = decode_frame(message, TO_CONTROL)
                answer = await self._on_frame(record, link, frame)
            except MaiaError as error:
                link.refused_frames += 1
                if link.refused_frames > MAX_REFUSED_FRAMES:
                    await send(FenceFrame("fence", "refused_frames"))
                    return
                await send(error_frame(error))
                continue
            for frame_out in answer:
                await send(frame_out)
            now = self._clock.monotonic_ms()
            if now - touched >= TOUCH_EVERY_MS:
                touched = now
                await self._touch(record.machine_id)

    async def _touch(self, machine_id: str) -> None:
        wall = self._clock.wall_ms()
        await self._store.write(lambda c: touch_machine(c, machine_id, wall))

    async def _on_frame(self, record: MachineRecord, link: LinkState, frame: Any) -> list[Any]:
        if isinstance(frame, StatusFrame):
            status = frame.status
            if status.node_id != record.machine_id or (
                status.registration_incarnation != record.incarnation
            ):
                raise MaiaError("validation_failed", "frame.status: names another machine or "
                                "incarnation", {"path": "frame.status.nodeId"})  # fmt: skip
            if status.report_sequence <= link.last_report_sequence:
                raise MaiaError("validation_failed", "frame.status.reportSequence: not above "
                                f"{link.last_report_sequence}",
                                {"path": "frame.status.reportSequence"})  # fmt: skip
            link.heartbeats += 1
            link.last_report_sequence = status.report_sequence
            link.last_heartbeat_ms = self._clock.monotonic_ms()
            await self.relay.on_status(status)
            return []
        if isinstance(frame, (EnrollFrame, HelloFrame)):
            raise MaiaError("invalid_request", f"the request is malformed: {frame.type} only "
                            "opens a link", {"id": None})  # fmt: skip
        if isinstance(frame, LeaseRequestFrame):
            if frame.request.node_id != record.machine_id:
                return [RefusedFrame("refused", frame.request.request_id, "wrong_node")]
            return await self.relay.on_request(frame.request)
        if isinstance(frame, TurnEventFrame) and frame.source_id.startswith(
            f"{record.machine_id}."
        ):  # fmt: skip
            again = self.acks.already(frame.source_id, frame.sequence)
            if again is not None:  # stored already: acknowledge it again, store it no more
                return [AckFrame("ack", frame.source_id, again)]
        await self.relay.on_frame(record.machine_id, frame)  # worker and turn_event
        return []


async def _refuse(socket: WebSocketConnection, error: MaiaError) -> None:
    try:
        await socket.send_message(encode_frame(error_frame(error)))
        await socket.aclose(code=1008, reason=error.code)
    except ConnectionClosed:
        pass
