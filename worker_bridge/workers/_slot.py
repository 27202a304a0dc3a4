"""The one harness process an adapter worker holds, and the failures it reports.

Shared by the adapters: start it (killed with the worker by an exit hook), drop it (its
whole process group), and word a failure with the exit status and the stderr tail.
"""

from __future__ import annotations

from ._agent_env import harness_environment
from ._harness import HarnessMissing, HarnessProcess

# typing costs a worker ~20 ms of start-up: import it for the type checker only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence

    from worker_bridge._sdk import WorkerContext


class TurnFailure(Exception):
    """The harness failed this turn; the message names the cause and its stderr tail."""


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
        """Start the harness. Raises `TurnFailure` if it cannot start."""
        self.drop()
        try:
            process = HarnessProcess(
                argv,
                env=harness_environment(extra_env),
                on_stderr=self._stderr,
                transcript=self.context.options.get("transcriptPath") or None,
            )
        except HarnessMissing as exc:
            raise TurnFailure(f"{self.harness}: {exc}") from exc
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
        tail = process.stderr_tail()
        status = process.describe_exit()
        return f"{self.harness} {what} ({status})" + (f"; stderr: {tail}" if tail else "")

    def fail(self, what: str) -> TurnFailure:
        """A `TurnFailure` worded by `why`, after dropping the process."""
        failure = TurnFailure(self.why(what))
        self.drop()
        return failure

    def _stderr(self, line: str) -> None:
        self.context.diagnostic({"stream": "stderr", "harness": self.harness, "line": line})
