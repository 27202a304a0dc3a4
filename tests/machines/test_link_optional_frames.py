"""The optional Control -> Execution frames (`abandon`) go only to a Node that named them at
the link's upgrade (`Maia-Machine-Frames`). An older Execution Node names none: it would
refuse an `abandon` (an unknown frame type: logged, the link stays up) and never fence the
worker, so a turn Control ended `turn_rejected` could still run there. Control therefore
does not fence over such a link: the interrupt stays refused as it was before the frame
existed, and nothing is sent it cannot act on. Before the negotiation, `abandon` over an
older Node's link answered True and sent the frame (the first test failed)."""

from __future__ import annotations

import base64
from typing import Any

import pytest
import trio
import trio.testing

from actors.machine import AbandonFrame, LinkBoard, MachineRelay, WorkerFrame
from maia.core import FakeClock, MaiaError
from maia.machines import TO_EXECUTION, decode_frame
from maia.machines._execution import _link_headers
from maia.machines._gate import Admitted, check_machine_upgrade

M, A = "machine_" + "a" * 32, "assignment_" + "b" * 32
KEY = base64.b64encode(b"k" * 16)
CREDENTIAL = "mcred1." + M + "." + "x" * 43


def _relay(frames: frozenset[str]) -> tuple[MachineRelay, list[Any]]:
    sent: list[Any] = []
    links = LinkBoard()

    async def send(frame: object) -> None:
        sent.append(frame)

    links.open(M, lambda: None, send, frames)
    return MachineRelay(None, FakeClock(), links), sent


async def _dispatched(relay: MachineRelay) -> Any:
    handle = relay.attach_handle(M, A, "attempt_a", 1)
    await relay.on_frame(M, WorkerFrame("worker", "attempt_a", "spawned", pid=7))
    await relay.on_frame(M, WorkerFrame("worker", "attempt_a", "initialized"))
    return handle


async def _drain(events: Any) -> None:
    async for _ in events:
        pass


def _abandoned(frames: frozenset[str]) -> tuple[bool, list[Any]]:
    result: list[bool] = []

    async def main() -> list[Any]:
        relay, sent = _relay(frames)
        handle = await _dispatched(relay)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_drain, handle.prompt("turn_a", "hi"))
            await trio.testing.wait_all_tasks_blocked()
            result.append(handle.abandon("turn_a", "why"))
            await handle.send_abandon()
            await relay.ask_again(M)  # nothing to re-ask yet, and nothing it cannot act on
            nursery.cancel_scope.cancel()
        return sent

    sent = trio.run(main)
    return result[0], [f for f in sent if isinstance(f, AbandonFrame)]


def test_an_older_nodes_link_is_never_sent_abandon_and_the_interrupt_stays_refused() -> None:
    fenced, abandons = _abandoned(frozenset())
    assert (fenced, abandons) == (False, [])


def test_a_node_that_names_abandon_is_fenced() -> None:
    fenced, abandons = _abandoned(frozenset({"abandon"}))
    assert fenced is True
    assert abandons == [AbandonFrame("abandon", "attempt_a", "turn_a", "why")]


def _upgrade(*extra: tuple[bytes, bytes]) -> Admitted:
    headers = [(b"Sec-WebSocket-Key", KEY), (b"Authorization", f"Bearer {CREDENTIAL}".encode()),
               *extra]  # fmt: skip
    verdict = check_machine_upgrade("/machines/v1", headers)
    assert isinstance(verdict, Admitted), verdict
    return verdict


def test_the_upgrade_names_the_frames_an_execution_node_understands() -> None:
    assert _upgrade().frames == frozenset()  # an older Node: no header
    ours = [h for h in _link_headers(CREDENTIAL) if h[0] != b"Authorization"]
    assert _upgrade(*ours).frames == frozenset({"abandon"})
    assert _upgrade((b"maia-machine-frames", b" abandon , later")).frames == {"abandon"}
    assert _upgrade((b"Maia-Machine-Frames", b"x" * 300)).frames == frozenset()
    twice = [(b"Maia-Machine-Frames", b"abandon")] * 2
    assert _upgrade(*twice).frames == frozenset()


def test_an_unknown_frame_type_is_refused_alone_at_the_execution_node() -> None:
    """What an older Node does with a frame type it does not know (and what this one does
    with a later Control's): a `validation_failed` its link logs and counts, not a close."""
    with pytest.raises(MaiaError) as refused:
        decode_frame('{"type": "later_frame", "attemptId": "a"}', TO_EXECUTION)
    assert refused.value.code == "validation_failed"
