"""A Session write storage refused that must not be dropped: a turn's end, and the rows of a
worker that went (review8c D3: a full disk while a turn ends left it `running` for good and
the Session wedged, with nothing logged).

The write is kept in memory and tried again when its `Flush` comes, after a backoff that
doubles from `RETRY_FIRST_S` to at most `RETRY_MAX_S`, each failure logged. At most one retry
is scheduled at a time (an effect that sleeps, then tells `Flush`): bounded, and it vetoes
passivation, so the pending write stays in this incarnation until it is written. A turn's end
still unwritten after `END_RETRIES` failures fails the Session's worker the existing way
(`worker_gone`), whose own rows are then retried the same way.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable

import trio

from maia.core import MaiaError

from ._actor import SessionCore
from ._messages import Flush

log = logging.getLogger("maia.session")
RETRY_FIRST_S = 0.05
RETRY_MAX_S = 5.0
END_RETRIES = 16  # about 50 s of refused writes: then the worker is failed


class WriteRetry:
    """The backoff of one kind of pending write of one Session."""

    def __init__(self, core: SessionCore, what: str) -> None:
        self.core = core
        self.what = what
        self.failures = 0
        self.armed = False

    def delay_s(self) -> float:
        return float(min(RETRY_FIRST_S * 2 ** max(0, self.failures - 1), RETRY_MAX_S))

    def failed(self, error: MaiaError) -> None:
        """Count a refused write, log it and schedule its `Flush` (unless one is on its way)."""
        self.failures += 1
        delay = self.delay_s()
        log.warning("session %s: %s not written (failure %d: %s); tried again in %.2f s",
                    self.core.session_id, self.what, self.failures, error, delay)  # fmt: skip
        if not self.armed:
            self.armed = True
            self.core.effect("write-retry", self._later(delay))

    def succeeded(self) -> None:
        if self.failures:
            log.warning("session %s: %s written after %d failures", self.core.session_id,
                        self.what, self.failures)  # fmt: skip
        self.failures = 0

    def _later(self, delay: float) -> Callable[[], Awaitable[None]]:
        async def run() -> None:
            await trio.sleep(delay)
            self.armed = False
            await self.core.tell_self(Flush())

        return run
