"""The one harness process an adapter worker holds, and the failures it reports.

Shared by the adapters: start it (killed with the worker by an exit hook), drop it (its
whole process group), word a failure with the exit status and the stderr tail, bound a
turn (`TurnWatch`: idle timeout, interrupt grace), and run the worker (`serve_adapter`).
"""

from __future__ import annotations

import time

from worker_bridge._sdk import run_worker

from ._agent_env import harness_environment
from ._harness import HarnessGone, HarnessMissing, HarnessProcess

# typing costs a worker ~20 ms of start-up: import it for the type checker only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Protocol

    from worker_bridge._sdk import WorkerContext
    from worker_bridge._turn import Turn

    class Adapter(Protocol):
        def handle(self, context: WorkerContext, turn: Turn) -> None: ...


INTERRUPT_BOUND_S = 8.0  # within the Node's 10 s interrupt grace
LAUNCH_FAILED = "launch_failed"  # the turn's failure code when the harness never got going
EXITED_AT_START = "exited before answering"


class TurnFailure(Exception):
    """The harness failed this turn; the message names the cause and its stderr tail.
    `code` is the turn's failure code (None: the Node's `turn_failed`)."""

    code: str | None = None


class LaunchFailure(TurnFailure):
    """The harness could not be started for this turn: its binary is missing or not
    executable, it exited before answering, or it refused or timed out its initialize."""

    code = LAUNCH_FAILED


def option_seconds(context: WorkerContext, name: str, default_ms: int) -> float:
    """An initialize option in milliseconds, as seconds (the default if absent or bad)."""
    try:
        return max(1, int(context.options.get(name) or default_ms)) / 1000
    except ValueError:
        return default_ms / 1000


class HarnessSlot:
    """Holds at most one harness process for a worker."""

    def __init__(self, context: WorkerContext, harness: str) -> None:
        self.context = context
        self.harness = harness
        self.process: HarnessProcess | None = None

    @property
    def alive(self) -> bool:
        return self.process is not None and self.process.alive

    def start(self, argv: Sequence[str], extra_env: dict[str, str] | None = None) -> HarnessProcess:
        """Start the harness. Raises `LaunchFailure` if it cannot start."""
        self.drop()
        try:
            process = HarnessProcess(
                argv,
                env=harness_environment(extra_env),
                on_stderr=self._stderr,
                transcript=self.context.options.get("transcriptPath") or None,
            )
        except HarnessMissing as exc:
            raise LaunchFailure(f"{self.harness}: {exc}") from exc
        self.process = process
        self.context.exit_hooks.append(process.stop)
        return process

    def drop(self) -> None:
        """Stop the harness (its process group), if one runs."""
        process, self.process = self.process, None
        if process is not None:
            process.stop()
            if process.stop in self.context.exit_hooks:
                self.context.exit_hooks.remove(process.stop)

    def why(self, what: str) -> str:
        """`<harness> <what> (<exit status>); stderr: <tail>`."""
        process = self.process
        if process is None:
            return f"{self.harness} {what}"
        status = process.describe_exit()  # first: the tail of an exited one is complete
        tail = process.stderr_tail()
        return f"{self.harness} {what} ({status})" + (f"; stderr: {tail}" if tail else "")

    def fail(self, what: str, *, launch: bool = False) -> TurnFailure:
        """A `TurnFailure` worded by `why` (a `LaunchFailure` if `launch`: the harness was
        starting), after dropping the process."""
        failure = (LaunchFailure if launch else TurnFailure)(self.why(what))
        self.drop()
        return failure

    def _stderr(self, line: str) -> None:
        self.context.diagnostic({"stream": "stderr", "harness": self.harness, "line": line})


def start_problem(slot: HarnessSlot, exc: Exception) -> str:
    """What went wrong while a JSON-RPC harness was starting (its `initialize` or its
    session's set-up): it exited before answering, or `did not start: <exc>`."""
    process = slot.process
    if isinstance(exc, HarnessGone) or (process is not None and not process.alive):
        return EXITED_AT_START
    return f"did not start: {exc}"


class TurnWatch:
    """One turn's two bounds: a harness silent for `idle_s` fails the turn, and one that has
    not ended an interrupted turn within INTERRUPT_BOUND_S is dropped (the next turn starts
    it afresh)."""

    def __init__(self, slot: HarnessSlot, turn: Turn, idle_s: float) -> None:
        self.slot = slot
        self.turn = turn
        self.idle_s = idle_s
        self.interrupted_at: float | None = None
        self.last_output = time.monotonic()

    def interrupt_now(self) -> bool:
        """True once, when the turn's interrupt is first seen: tell the harness then."""
        if self.turn.interrupted.is_set() and self.interrupted_at is None:
            self.interrupted_at = time.monotonic()
            return True
        return False

    def gave_up(self) -> bool:
        """True (the harness dropped) once an interrupt has gone unhonoured too long."""
        if self.interrupted_at is None:
            return False
        if time.monotonic() - self.interrupted_at <= INTERRUPT_BOUND_S:
            return False
        self.slot.drop()
        return True

    def quiet(self) -> None:
        """Nothing came this poll. Raises `TurnFailure` once the harness was idle too long."""
        if time.monotonic() - self.last_output > self.idle_s:
            raise self.slot.fail(f"produced no output for {self.idle_s:g} s")

    def heard(self) -> None:
        """Output came (or an approval a person may have taken long over has been answered)."""
        self.last_output = time.monotonic()


def serve_adapter(make: Callable[[WorkerContext], Adapter], harness: str, version: str) -> None:
    """Run an adapter worker: one adapter, made at the first turn, answers every turn."""
    adapter: Adapter | None = None

    def handle(context: WorkerContext, turn: Turn) -> None:
        nonlocal adapter
        adapter = adapter or make(context)
        adapter.handle(context, turn)

    run_worker(handle, name=harness, version=version, capabilities=["agent", "approvals"])
