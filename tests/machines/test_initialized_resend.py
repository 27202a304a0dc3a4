"""A worker's `initialized` lost in a dying link is sent again on the next connection:
two real Node processes on 127.0.0.1 with the fault proxy between them, the frame that says
the worker initialized lost on its way to Control, then the link cut and reopened (without the
re-send Control's wait ends after 60 s and the launch fails). And, as logic, what the
outbox sends again and when it forgets the frame."""

from __future__ import annotations

from pathlib import Path

import trio

from maia.machines import EvidenceOutbox
from simulations import Fate

from ._nodes import checked_traces, wait_for
from .test_outbox import Wire
from .test_placement_e2e import _attempts, _turn
from .test_proxy_scenarios import BOUND_S, Proxied, _blocking, _proxied, _session


def _lost(p: Proxied) -> int:
    return sum(1 for event in p.proxy.events if event.fate is Fate.LOST)


async def test_a_lost_initialized_is_sent_again_and_the_turn_completes(
    tmp_path: Path,
) -> None:
    """Control hears the worker spawn, but the proxy loses the frame saying it initialized
    (every message toward Control that carries it); cut and reopened: Control hears the
    re-sent `initialized`, the turn completes in the one worker, the traces hold no
    violation. The proxy drops by content, so nothing races the worker's start-up."""
    with trio.fail_after(BOUND_S):
        async with _proxied(tmp_path, seed=31) as p:
            session_id = await _session(p)
            p.proxy.drop_containing("to_control", '"initialized"')
            await _blocking(p.control.maia, "turn", "send", session_id, "after the loss")
            await _blocking(wait_for, lambda: " initialized" in p.execution.log(),
                            "the worker did not initialize", p.execution)  # fmt: skip
            await _blocking(wait_for, lambda: _lost(p) > 0, "no initialized was lost", None)
            await _blocking(wait_for, lambda: _attempts(p.control, session_id),
                            "Control did not hear the spawn", p.control)  # fmt: skip
            assert _turn(p.control, session_id).get("state") != "completed"
            p.proxy.sever()
            p.proxy.heal()
            await _blocking(wait_for, lambda: _turn(p.control, session_id).get("state")
                            in ("completed", "failed"), "the turn did not end", p.control,
                            120)  # fmt: skip
            turn = _turn(p.control, session_id)
            assert turn["state"] == "completed", turn
            assert len(await _blocking(_attempts, p.control, session_id)) == 1
            verdict = checked_traces(p.control, p.execution)
            assert verdict.checks > 0
            print(f"\ntrace: {verdict}")


async def test_an_initialized_goes_again_after_each_rewind_until_a_record_of_its_turn() -> None:
    """An `initialized` sent is sent again after a rewind; once a record of its attempt is
    kept (Control prompted it, so it heard the frame) a rewind no longer sends it."""
    wire = Wire()
    outbox = EvidenceOutbox(wire.send)
    await outbox.send_after_records("attempt_a", "init-a", initialized=True)
    outbox.rewind()
    await outbox.flush()
    assert wire.sent == ["init-a", "init-a"]
    outbox.keep("s", 1, "r1", attempt_id="attempt_a")
    await outbox.flush()
    outbox.rewind()
    await outbox.flush()
    assert wire.sent == ["init-a", "init-a", "r1", "r1"]


async def test_an_exit_replaces_the_initialized_that_a_rewind_sends() -> None:
    """After its attempt's exit, a rewind sends the exit again, not the `initialized`."""
    wire = Wire()
    outbox = EvidenceOutbox(wire.send)
    await outbox.send_after_records("attempt_a", "init-a", initialized=True)
    await outbox.send_after_records("attempt_a", "exit-a", exit_frame=True)
    outbox.rewind()
    await outbox.flush()
    assert wire.sent == ["init-a", "exit-a", "exit-a"]
