"""An in-process stand-in for the worker supervisor (the runtime's worker seam), so Session
actor tests run on `MockClock` without subprocesses. It behaves like the echo worker for
the directives these tests use: a prompt is echoed back in deltas then `completed`;
`/sleep MS rest` waits MS (trio time) first; `/fail` fails the turn; `/crash` loses the
worker mid-turn; `/runtime-lost` loses it as the machine relay does when its Execution
Node is lost (exit reason `runtime_lost`); `/ask TOOL` calls the tool TOOL (a `tool-call`
event) and ends with the answer's content (or `interrupted`); the prompt named by
`explode_on` makes the event stream raise (a bug).
Interrupts and stops end the running turn `interrupted`. The real echo worker and
supervisor are tested beside it (tests/actors/session/test_actor.py)."""

from __future__ import annotations

import itertools
from collections.abc import AsyncIterator
from typing import Any

import trio

from supervision.workers import ExitInfo, TurnEvent, WorkerFailed, WorkerSpec, WorkerState

CHUNK = 4
_pids = itertools.count(40_000)


class FakeHandle:
    def __init__(self, epoch: int, *, init_delay_s: float, explode_on: str | None) -> None:
        self._explode_on = explode_on
        self.epoch = epoch
        self.attempt_id = f"attempt_fake{epoch}"
        self.pid = next(_pids)
        self.state = WorkerState.STARTING
        self._init_delay_s = init_delay_s
        self._initialized = trio.Event()
        self._stopped = trio.Event()
        self._interrupted = trio.Event()
        self._exit: ExitInfo | None = None
        self.prompts: list[str] = []
        self.batched = False
        self.tool_results: list[tuple[str, bool, str]] = []  # (callId, ok, content)
        self._answered = trio.Event()

    async def tool_result(self, turn_id: str, call_id: str, ok: bool, content: str) -> None:
        await trio.lowlevel.checkpoint()
        self.tool_results.append((call_id, ok, content))
        self._answered.set()

    async def run(self) -> None:
        await trio.sleep(self._init_delay_s)
        if self.state is WorkerState.STARTING:
            self.state = WorkerState.READY
            self._initialized.set()

    async def wait_initialized(self) -> None:
        await self._initialized.wait()
        if self.state is WorkerState.EXITED:
            raise WorkerFailed(f"worker {self.attempt_id} exited before it initialized")

    async def wait_stopped(self) -> ExitInfo:
        await self._stopped.wait()
        assert self._exit is not None
        return self._exit

    def _end(self, returncode: int | None, why: str | None = None) -> ExitInfo:
        if self._exit is None:
            self.state = WorkerState.EXITED
            self._exit = ExitInfo(returncode, None, why, "exited", (), "")
            self._interrupted.set()
            self._initialized.set()
            self._stopped.set()
        return self._exit

    async def stop(self, reason: str = "stop") -> ExitInfo:
        await trio.lowlevel.checkpoint()
        return self._end(0)

    async def interrupt(self, turn_id: str) -> None:
        await trio.lowlevel.checkpoint()
        self._interrupted.set()
        self._answered.set()

    def prompt(
        self, turn_id: str, text: str, *, tools: bool = False, artifacts: str | None = None
    ) -> AsyncIterator[TurnEvent]:
        self.prompts.append(text)
        self._interrupted = trio.Event()
        events = self._turn(turn_id, text)
        return _Batched(events) if self.batched else events

    async def _turn(self, turn_id: str, text: str) -> AsyncIterator[TurnEvent]:
        yield TurnEvent(turn_id, "started")
        if text == self._explode_on:
            raise RuntimeError("the worker's stream broke")  # a bug, not a worker failure
        word, _, rest = text.partition(" ")
        if word == "/sleep":
            ms, _, text = rest.partition(" ")
            with trio.move_on_after(int(ms) / 1000):
                await self._interrupted.wait()
            if self._interrupted.is_set():
                yield TurnEvent(turn_id, "interrupted")
                return
        elif word == "/ask":
            self._answered = trio.Event()
            arguments = {"kind": "command", "summary": f"run {rest}", "canRemember": True}
            yield TurnEvent(turn_id, "tool-call", None,
                            {"callId": "call-1", "name": rest, "arguments": arguments})  # fmt: skip
            answers = len(self.tool_results)
            with trio.move_on_after(3600):
                await self._answered.wait()  # an answer, or an interrupt
            if len(self.tool_results) == answers:
                yield TurnEvent(turn_id, "interrupted")
                return
            text = self.tool_results[-1][2]
        elif word == "/fail":
            yield TurnEvent(turn_id, "failed", "it failed on purpose")
            return
        elif word == "/crash":
            yield TurnEvent(turn_id, "delta", "crashing")
            self._end(3)
            yield TurnEvent(turn_id, "lost", "the worker exited")
            return
        elif word == "/runtime-lost":  # as a remote worker ends when its Node is lost
            yield TurnEvent(turn_id, "delta", "far away")
            self._end(None, "runtime_lost")
            yield TurnEvent(turn_id, "lost", "runtime_lost")
            return
        for start in range(0, len(text), CHUNK):
            yield TurnEvent(turn_id, "delta", text[start : start + CHUNK])
        yield TurnEvent(turn_id, "completed", text)


class _Batched(AsyncIterator[TurnEvent]):
    """A turn's events through `batches()`, as the real handle hands over what one read
    holds: here a whole turn in one batch (for fast turns; a slow one's batch waits)."""

    def __init__(self, events: AsyncIterator[TurnEvent]) -> None:
        self._events = events

    def __aiter__(self) -> _Batched:
        return self

    async def __anext__(self) -> TurnEvent:
        return await self._events.__anext__()

    async def batches(self) -> AsyncIterator[tuple[TurnEvent, ...]]:
        yield tuple([event async for event in self._events])


class FakeWorkers:
    """The supervisor's interface, in process. `spawned` lists every handle started."""

    def __init__(self, nursery: trio.Nursery, *, init_delay_s: float = 0.05) -> None:
        self._nursery = nursery
        self._epochs = itertools.count(1)
        self._init_delay_s = init_delay_s
        self.spawned: list[FakeHandle] = []
        self.explode_on: str | None = None  # a prompt whose stream raises (a bug)
        self.batched = False  # hand a turn's events over in one batch, as the real handle

    async def start_worker(self, spec: WorkerSpec) -> Any:
        await trio.lowlevel.checkpoint()
        handle = FakeHandle(next(self._epochs), init_delay_s=self._init_delay_s,
                            explode_on=self.explode_on)  # fmt: skip
        handle.batched = self.batched
        self.spawned.append(handle)
        self._nursery.start_soon(handle.run)
        return handle

    def live(self) -> list[Any]:
        return [h for h in self.spawned if h.state is not WorkerState.EXITED]

    async def stop_all(self, reason: str = "supervisor stopping") -> None:
        for handle in self.live():
            await handle.stop(reason)
