"""Real worker processes on the real clock: fencing, bounded stop, sweeps, epochs."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
import trio

from maia.core import MaiaError
from supervision._worker_core import ACK_EVERY
from supervision.workers import (
    FileEpochSource,
    MemoryEpochSource,
    StderrRing,
    TurnEvent,
    WorkerFailed,
    WorkerHandle,
    WorkerSpec,
    WorkerState,
    WorkerTimings,
    is_subreaper,
    open_worker_supervisor,
    serve_worker_supervisor,
)

ECHO = "worker_bridge.workers.echo"
INTERPRETER = os.path.abspath(sys.executable)
SHORT = WorkerTimings(
    init_ms=5_000, heartbeat_ms=200, interrupt_ms=800, terminate_ms=800, kill_wait_ms=2_000
)


def echo_spec(tmp_path: Path, **env: str) -> WorkerSpec:
    return WorkerSpec.python_module(ECHO, cwd=str(tmp_path), env=env)


async def turn(handle: WorkerHandle, turn_id: str, text: str) -> list[TurnEvent]:
    return [event async for event in handle.prompt(turn_id, text)]


def alive(pid: int) -> bool:
    """Whether /proc shows `pid` as a process that is not a zombie."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return False
    return "State:\tZ" not in status


async def test_echo_turn_streams_deltas_then_completed(tmp_path: Path) -> None:
    """A prompt is answered by started, deltas whose text joins to the prompt, completed."""
    log = tmp_path / "echo.log"
    with trio.fail_after(20):
        async with open_worker_supervisor(MemoryEpochSource(), SHORT) as supervisor:
            handle = await supervisor.start_worker(echo_spec(tmp_path, MAIA_ECHO_LOG=str(log)))
            await handle.wait_initialized()
            text = "hello, worker " * 20
            events = await turn(handle, "turn-1", text)
            assert events[0].kind == "started"
            assert events[-1].kind == "completed"
            assert "".join(e.text or "" for e in events if e.kind == "delta") == text
            stats = handle.statistics()
            assert stats.state is WorkerState.READY
            assert stats.epoch == 1
            assert stats.turns == 1
            info = await handle.stop("done")
    assert info.returncode == 0
    assert info.stop_phase == "interrupt"
    assert log.read_text().split() == ["turn-1", handle.attempt_id, str(handle.pid)]


@pytest.mark.slow
async def test_ignore_term_worker_is_gone_within_default_bounds(tmp_path: Path) -> None:
    """At the spec's timings, a worker ignoring interrupts, shutdown and SIGTERM mid-turn
    dies by SIGKILL within interrupt (10 s) + terminate (5 s) + 1 s; its turn is lost."""
    async with open_worker_supervisor(MemoryEpochSource()) as supervisor:
        handle = await supervisor.start_worker(echo_spec(tmp_path))
        with trio.fail_after(15):
            await handle.wait_initialized()
            assert (await turn(handle, "t1", "/ignore-term stubborn"))[-1].kind == "completed"
        events: list[TurnEvent] = []
        started = trio.Event()

        async def consume() -> None:
            async for event in handle.prompt("t2", "/sleep 60000 never"):
                events.append(event)
                started.set()

        async with trio.open_nursery() as nursery:
            nursery.start_soon(consume)
            with trio.fail_after(5):
                await started.wait()  # the turn runs: the interrupt meets a turn
            with trio.fail_after(10 + 5 + 1):
                info = await handle.stop("test")
    assert [e.kind for e in events] == ["started", "lost"]
    assert info.stop_phase == "kill"
    assert info.signal == 9
    assert not alive(handle.pid)


async def test_silent_worker_is_fenced_after_three_missed_heartbeats(tmp_path: Path) -> None:
    """/silent stops heartbeats: the worker is fenced and stopped, the turn is lost."""
    with trio.fail_after(20):
        async with open_worker_supervisor(MemoryEpochSource(), SHORT) as supervisor:
            handle = await supervisor.start_worker(echo_spec(tmp_path))
            await handle.wait_initialized()
            events = await turn(handle, "t", "/silent")
            info = await handle.wait_stopped()
    assert events[-1].kind == "lost"
    assert info.fence_reason is not None
    assert "3 heartbeats missed" in info.fence_reason
    assert not alive(handle.pid)


async def test_grandchild_that_called_setsid_does_not_survive_the_stop(tmp_path: Path) -> None:
    """A setsid grandchild escapes the group kill; the subreaper sweep still ends it."""
    with trio.fail_after(20):
        async with open_worker_supervisor(MemoryEpochSource(), SHORT) as supervisor:
            assert supervisor.subreaper
            assert is_subreaper()
            handle = await supervisor.start_worker(echo_spec(tmp_path))
            await handle.wait_initialized()
            events = await turn(handle, "t", "/grandchild")
            grandchild = int((events[-1].text or "").split()[-1])
            assert alive(grandchild)
            assert os.getsid(grandchild) != os.getsid(handle.pid)
            info = await handle.stop("test")
    assert grandchild in info.swept
    assert not alive(grandchild)
    assert not is_subreaper()  # released with the supervisor: the process adopts no more
    assert not os.access(f"/proc/{grandchild}", os.F_OK)


async def test_worker_that_never_initializes_is_fenced_at_the_init_bound(tmp_path: Path) -> None:
    """A process that never speaks is fenced at init_ms and killed; waiting callers fail."""
    spec = WorkerSpec(
        argv=(INTERPRETER, "-c", "import time; time.sleep(60)"),
        cwd=str(tmp_path),
    )
    timings = WorkerTimings(init_ms=700, heartbeat_ms=200, terminate_ms=800, kill_wait_ms=2000)
    with trio.fail_after(15):
        async with open_worker_supervisor(MemoryEpochSource(), timings) as supervisor:
            handle = await supervisor.start_worker(spec)
            with pytest.raises(WorkerFailed, match="no initialized within 700 ms"):
                await handle.wait_initialized()
            info = await handle.wait_stopped()
    assert info.signal == 15  # SIGTERM sufficed: the fence skips the interrupt phase
    assert not alive(handle.pid)


async def test_frame_of_an_old_epoch_is_refused_and_fences(tmp_path: Path) -> None:
    """A worker stamping an older epoch is fenced with a protocol error naming the epoch."""
    with trio.fail_after(20):
        async with open_worker_supervisor(MemoryEpochSource(last=41), SHORT) as supervisor:
            handle = await supervisor.start_worker(echo_spec(tmp_path))
            await handle.wait_initialized()
            assert handle.epoch == 42
            events = await turn(handle, "t", "/stale-epoch")
            info = await handle.wait_stopped()
    assert events[-1].kind == "lost"
    assert info.fence_reason is not None
    assert "epoch: 41 is older than this attempt's epoch 42" in info.fence_reason


@pytest.mark.parametrize(
    ("directive", "needle"), [("/oversize", "exceeds 1048576"), ("/garbage", "UTF-8")]
)
async def test_oversize_and_garbage_fence_the_worker_not_the_supervisor(
    tmp_path: Path, directive: str, needle: str
) -> None:
    """Protocol garbage fences that worker; the supervisor goes on serving a new attempt."""
    with trio.fail_after(25):
        async with open_worker_supervisor(MemoryEpochSource(), SHORT) as supervisor:
            handle = await supervisor.start_worker(echo_spec(tmp_path))
            await handle.wait_initialized()
            events = await turn(handle, "t", directive)
            info = await handle.wait_stopped()
            assert events[-1].kind == "lost"
            assert info.fence_reason is not None
            assert "protocol error" in info.fence_reason
            assert needle in info.fence_reason
            again = await supervisor.start_worker(echo_spec(tmp_path))
            await again.wait_initialized()
            assert again.epoch > handle.epoch
            assert (await turn(again, "t2", "still here"))[-1].text == "still here"


async def test_crash_mid_turn_loses_the_turn_and_records_the_exit_status(tmp_path: Path) -> None:
    """/crash exits 3 mid-turn: the turn ends `lost` and the exit status is recorded."""
    with trio.fail_after(20):
        async with open_worker_supervisor(MemoryEpochSource(), SHORT) as supervisor:
            handle = await supervisor.start_worker(echo_spec(tmp_path))
            await handle.wait_initialized()
            events = await turn(handle, "t", "/crash")
            info = await handle.wait_stopped()
    assert events[-1].kind == "lost"
    assert info.returncode == 3
    assert info.fence_reason is None


async def test_a_lost_turn_names_the_exit_status_and_the_stderr_tail(tmp_path: Path) -> None:
    """The `lost` event of a worker that died mid-turn says why: its exit status and the
    last lines of its stderr (here a line written just before `/crash`)."""
    script = (
        "import sys; sys.stderr.write('about to go: disk on fire\\n'); sys.stderr.flush();"
        " from worker_bridge.workers.echo import main; main()"
    )
    spec = WorkerSpec(argv=(INTERPRETER, "-c", script), cwd=str(tmp_path))
    with trio.fail_after(20):
        async with open_worker_supervisor(MemoryEpochSource(), SHORT) as supervisor:
            handle = await supervisor.start_worker(spec)
            await handle.wait_initialized()
            events = await turn(handle, "t", "/crash")
    assert events[-1].kind == "lost"
    assert "exited during the turn with status 3" in (events[-1].text or "")
    assert "about to go: disk on fire" in (events[-1].text or "")


async def test_interrupt_ends_a_sleeping_turn(tmp_path: Path) -> None:
    """An interrupt during /sleep ends the turn `interrupted` and the worker stays ready."""
    with trio.fail_after(20):
        async with open_worker_supervisor(MemoryEpochSource(), SHORT) as supervisor:
            handle = await supervisor.start_worker(echo_spec(tmp_path))
            await handle.wait_initialized()
            kinds = []
            async for event in handle.prompt("t", "/sleep 30000 never"):
                kinds.append(event.kind)
                if event.kind == "started":
                    assert await handle.interrupt("t")
            assert kinds == ["started", "interrupted"]
            assert handle.state is WorkerState.READY
            assert (await turn(handle, "t2", "after"))[-1].kind == "completed"


async def test_prompt_while_busy_is_refused(tmp_path: Path) -> None:
    """A second prompt during a turn is `invalid_state`, and the first turn is unharmed."""
    with trio.fail_after(20):
        async with open_worker_supervisor(MemoryEpochSource(), SHORT) as supervisor:
            handle = await supervisor.start_worker(echo_spec(tmp_path))
            await handle.wait_initialized()
            events = handle.prompt("t1", "/sleep 200 first")
            with pytest.raises(MaiaError, match="busy"):
                handle.prompt("t2", "second")
            assert [e async for e in events][-1].text == "first"


async def test_epochs_increase_across_attempts_and_file_restarts(tmp_path: Path) -> None:
    """Each launch gets a greater epoch; a file source continues after a 'restart'."""
    path = tmp_path / "epoch"
    assert [await FileEpochSource(path).next_epoch() for _ in range(3)] == [1, 2, 3]
    assert await FileEpochSource(path).next_epoch() == 4
    with trio.fail_after(20):
        async with open_worker_supervisor(FileEpochSource(path), SHORT) as supervisor:
            first = await supervisor.start_worker(echo_spec(tmp_path))
            second = await supervisor.start_worker(echo_spec(tmp_path))
            await first.wait_initialized()
            await second.wait_initialized()
            assert (first.epoch, second.epoch) == (5, 6)
            assert first.attempt_id != second.attempt_id


async def test_an_epoch_source_that_goes_back_is_refused(tmp_path: Path) -> None:
    """A source returning a used epoch is a bug: start_worker raises before spawning."""
    async with open_worker_supervisor(MemoryEpochSource(), SHORT) as supervisor:
        supervisor._highest_epoch = 5  # as if epochs 1..5 were handed out already
        with pytest.raises(RuntimeError, match="went back"):
            await supervisor.start_worker(echo_spec(tmp_path))
        assert supervisor.handles == {}


async def test_bad_specs_are_refused_with_a_clear_error(tmp_path: Path) -> None:
    """A relative interpreter or a missing cwd is `configuration_invalid`; nothing starts."""
    async with open_worker_supervisor(MemoryEpochSource(), SHORT) as supervisor:
        with pytest.raises(MaiaError, match="absolute path"):
            await supervisor.start_worker(WorkerSpec(argv=("python",), cwd=str(tmp_path)))
        with pytest.raises(MaiaError, match="not a directory"):
            await supervisor.start_worker(
                WorkerSpec(argv=(sys.executable,), cwd=str(tmp_path / "missing"))
            )
        assert supervisor.handles == {}


async def test_a_worker_exits_when_its_stdin_closes(tmp_path: Path) -> None:
    """A dead Node (closed pipe) leaves no worker behind: the echo worker exits by itself."""
    with trio.fail_after(10):
        process = await trio.lowlevel.open_process(
            [sys.executable, "-m", ECHO], stdin=-1, stdout=-1, stderr=-1, cwd=str(tmp_path)
        )
        assert process.stdin is not None
        await process.stdin.aclose()
        assert await process.wait() == 0


def test_stderr_ring_keeps_the_last_64_kib() -> None:
    """The crash report keeps the tail of stderr, bounded at 64 KiB."""
    ring = StderrRing()
    for index in range(100):
        ring.append(f"{index:04d}".encode() * 1000)
    text = ring.text()
    assert len(text) == 64 * 1024
    assert text.endswith("0099")
    assert ring.total == 400_000


async def test_a_slow_consumer_slows_the_worker_but_never_fences_it(tmp_path: Path) -> None:
    """With a consumer pausing past three heartbeat intervals mid-flood, the reader keeps
    counting heartbeats, the window holds the worker back, and every delta arrives."""
    with trio.fail_after(30):
        async with open_worker_supervisor(MemoryEpochSource(), SHORT) as supervisor:
            handle = await supervisor.start_worker(echo_spec(tmp_path))
            await handle.wait_initialized()
            deltas: list[str | None] = []
            async for event in handle.prompt("t", "/flood 2000"):
                if len(deltas) == 10:
                    await trio.sleep(1.0)  # > 3 x 200 ms without consuming
                if event.kind == "delta":
                    deltas.append(event.text)
            assert event.kind == "completed"
            assert deltas == [str(i) for i in range(2000)]
            assert handle.fence_reason is None
            assert handle.statistics().state is WorkerState.READY
            assert 0 < handle.stream.connection.wire.unacked_received < ACK_EVERY


async def test_a_turns_last_events_are_acknowledged_with_the_next_prompt(
    tmp_path: Path,
) -> None:
    """A turn's events past the last full ACK_EVERY stay unacknowledged until the next
    prompt, whose write acknowledges them: after the second turn only its own remain."""
    with trio.fail_after(30):
        async with open_worker_supervisor(MemoryEpochSource(), SHORT) as supervisor:
            handle = await supervisor.start_worker(echo_spec(tmp_path))
            await handle.wait_initialized()
            first = [event async for event in handle.prompt("t1", "/flood 300")]
            wire = handle.stream.connection.wire
            numbered = [event for event in first if event.sequence]
            assert len(numbered) > ACK_EVERY * 2
            assert wire.unacked_received == len(numbered) - ACK_EVERY * 2
            second = [event async for event in handle.prompt("t2", "hi")]
            assert second[-1].kind == "completed"
            assert wire.unacked_received == len([event for event in second if event.sequence])
            assert handle.fence_reason is None


async def test_batches_hand_over_every_event_read_so_far_in_order(tmp_path: Path) -> None:
    """`batches()` yields each wake-up's queued events as one tuple: once the reader has
    read the whole turn, the next batch (if the first did not take them all) is all the
    rest, ending with the final event; the events are the ones a one-at-a-time iteration
    gets."""
    with trio.fail_after(30):
        async with open_worker_supervisor(MemoryEpochSource(), SHORT) as supervisor:
            handle = await supervisor.start_worker(echo_spec(tmp_path))
            await handle.wait_initialized()
            singly = await turn(handle, "t1", "/flood 50")
            batches = handle.prompt("t2", "/flood 50").batches()
            first = await batches.__anext__()  # the prompt is sent by the first step
            await handle.wait_turn_ended()  # the reader has queued every event since
            rest = [batch async for batch in batches]
            together = [event for batch in (first, *rest) for event in batch]
            assert len(rest) <= 1
            assert together[-1].final
            assert len(together) == 52
            assert [(e.kind, e.text) for e in together] == [(e.kind, e.text) for e in singly]
            sequences = [e.sequence for e in together if e.sequence]
            assert sequences == sorted(sequences)
            assert len(sequences) == len(together)
            assert handle.state is WorkerState.READY
            assert handle.fence_reason is None


async def test_an_abandoned_turn_does_not_break_the_handle(tmp_path: Path) -> None:
    """A consumer that stops iterating early leaves the worker to finish; the next turn works."""
    with trio.fail_after(20):
        async with open_worker_supervisor(MemoryEpochSource(), SHORT) as supervisor:
            handle = await supervisor.start_worker(echo_spec(tmp_path))
            await handle.wait_initialized()
            events = handle.prompt("t1", "/flood 500")
            async for event in events:
                if event.kind == "delta":
                    break
            await events.aclose()
            await handle.wait_turn_ended()
            assert handle.state is WorkerState.READY
            assert (await turn(handle, "t2", "next"))[-1].text == "next"
            assert handle.fence_reason is None


async def test_an_oversized_prompt_is_refused_before_it_is_sent(tmp_path: Path) -> None:
    """Text over 16 KiB is `validation_failed` naming `text`; the worker stays ready."""
    with trio.fail_after(20):
        async with open_worker_supervisor(MemoryEpochSource(), SHORT) as supervisor:
            handle = await supervisor.start_worker(echo_spec(tmp_path))
            await handle.wait_initialized()
            with pytest.raises(MaiaError, match="text: exceeds 16384 bytes"):
                handle.prompt("t", "x" * (16 * 1024 + 1))
            assert handle.state is WorkerState.READY


async def test_a_prompt_over_16_kib_travels_as_an_artifact(tmp_path: Path) -> None:
    """Given a home for artifacts, a 60,000-character prompt reaches the echo worker whole
    (its reply streamed back in full) and its artifact file is gone when the turn ends."""
    text = "ünïcödé " * 7_500
    with trio.fail_after(30):
        async with open_worker_supervisor(MemoryEpochSource(), SHORT) as supervisor:
            handle = await supervisor.start_worker(echo_spec(tmp_path))
            await handle.wait_initialized()
            events = [e async for e in handle.prompt("t", text, artifacts=str(tmp_path))]
            assert events[-1].kind == "completed", events[-1]
            assert "".join(e.text or "" for e in events if e.kind == "delta") == text
            assert list((tmp_path / "artifacts" / "sha256").iterdir()) == []
            assert handle.state is WorkerState.READY


async def test_diagnostics_arrive_in_batches_and_drops_are_reported(tmp_path: Path) -> None:
    """5,000 diagnostics overflow the 2,048-record queue: every record is either delivered
    or counted as dropped in a later batch; none vanish silently."""
    with trio.fail_after(20):
        async with open_worker_supervisor(MemoryEpochSource(), SHORT) as supervisor:
            handle = await supervisor.start_worker(echo_spec(tmp_path))
            await handle.wait_initialized()
            assert (await turn(handle, "t", "/diagnostics 5000"))[-1].text == "diagnosed"
            for _ in range(300):  # batches follow the turn within a linger or a heartbeat
                if handle.diagnostics_received + handle.diagnostics_dropped >= 5000:
                    break
                await trio.sleep(0.05)
            stats = handle.statistics()
    assert stats.diagnostics_received + stats.diagnostics_dropped == 5000
    assert stats.diagnostics_dropped > 0
    assert stats.diagnostics_received >= 2048
    assert handle.diagnostics[0]["turnId"] == "t"


async def test_a_tool_call_is_surfaced_and_its_result_returned(tmp_path: Path) -> None:
    """/tool asks the Node for a tool; a consumer that hosts tools (`tools=True`) gets the
    call as an event and its result is relayed."""
    with trio.fail_after(20):
        async with open_worker_supervisor(MemoryEpochSource(), SHORT) as supervisor:
            handle = await supervisor.start_worker(echo_spec(tmp_path))
            await handle.wait_initialized()
            kinds = []
            async for event in handle.prompt("t", "/tool upper shout this", tools=True):
                kinds.append(event.kind)
                if event.kind == "tool-call":
                    assert event.data is not None
                    assert event.data["name"] == "upper"
                    text = event.data["arguments"]["text"]
                    with pytest.raises(MaiaError, match="content: exceeds 65536 bytes"):
                        await handle.tool_result("t", event.data["callId"], True, "x" * 65537)
                    await handle.tool_result("t", event.data["callId"], True, text.upper())
            assert kinds == ["started", "tool-call", "completed"]
            assert event.text == "SHOUT THIS"


async def test_a_tool_call_without_a_tool_host_is_refused_at_once(tmp_path: Path) -> None:
    """Prompted without `tools` (the Session today: no tool host), a tool call is answered at
    once with a typed `tool_unavailable` refusal: the worker goes on (echo fails its turn
    naming the refusal), the turn does not hang, and the worker takes the next turn."""
    with trio.fail_after(20):
        async with open_worker_supervisor(MemoryEpochSource(), SHORT) as supervisor:
            handle = await supervisor.start_worker(echo_spec(tmp_path))
            await handle.wait_initialized()
            events = await turn(handle, "t1", "/tool upper shout this")
            assert [e.kind for e in events] == ["started", "failed"]
            assert events[-1].text is not None
            refusal = json.loads(events[-1].text.removeprefix("tool upper failed: "))
            assert refusal["code"] == "tool_unavailable"
            assert refusal["tool"] == "upper"
            assert (await turn(handle, "t2", "still here"))[-1].text == "still here"


async def test_serve_worker_supervisor_stops_its_workers_when_cancelled(tmp_path: Path) -> None:
    """Started in a nursery, the service hands back its supervisor; cancelling the nursery
    stops every live worker (bounded) before the service returns."""
    with trio.fail_after(20):
        async with trio.open_nursery() as nursery:
            supervisor = await nursery.start(serve_worker_supervisor, MemoryEpochSource(), SHORT)
            handle = await supervisor.start_worker(echo_spec(tmp_path))
            await handle.wait_initialized()
            nursery.cancel_scope.cancel()
    assert handle.exit_info is not None
    assert handle.exit_info.returncode == 0
    assert not alive(handle.pid)
