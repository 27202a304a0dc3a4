"""A prompt the worker protocol refuses to write (here text with a lone surrogate, which no
JSON encoder can write as UTF-8), at a real echo worker: the acknowledgement computed for
the previous turn's events is still written, so the worker's sequence has no gap and its
window is freed; the refused turn ends `failed` naming the refusal (the worker is not lost),
and the same worker runs the next turn."""

from __future__ import annotations

from pathlib import Path

import trio

from supervision.workers import MemoryEpochSource, WorkerState, open_worker_supervisor

from .test_regressions import SHORT, echo_spec


async def test_a_refused_prompt_still_writes_its_ack_and_the_worker_goes_on(
    tmp_path: Path,
) -> None:
    """Turn 1 completes (its events wait for the ack the next prompt carries); turn 2's
    prompt is refused: it ends failed with the refusal named, the worker stays ready and
    unfenced, and turn 3 completes on the same worker, its events acknowledged."""
    with trio.fail_after(30):
        async with open_worker_supervisor(MemoryEpochSource(), SHORT) as supervisor:
            handle = await supervisor.start_worker(echo_spec(tmp_path))
            await handle.wait_initialized()
            first = [event.kind async for event in handle.prompt("t1", "hello")]
            assert first[-1] == "completed"
            assert handle.stream.connection.wire.unacked_received > 0  # the ack is owed
            refused = [event async for event in handle.prompt("t2", "bad \ud800 text")]
            assert [event.kind for event in refused] == ["failed"]
            assert "prompt" in (refused[0].text or "")
            assert "refused" in (refused[0].text or "")
            assert handle.stream.connection.wire.unacked_received == 0  # written after all
            assert handle.state is WorkerState.READY
            third = [event.kind async for event in handle.prompt("t3", "again")]
            assert third[-1] == "completed"
            assert handle.fence_reason is None
            assert handle.state is WorkerState.READY
