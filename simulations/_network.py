"""A fault-injecting network: delay, loss, duplication, reordering and partitions.

Every decision draws from the run's one `random.Random`, so a seed fixes every delivery.
Reordering comes from jitter (two messages on one link may overtake each other); spikes
push a message past the lease round-trip bound. Scripted rules let a named fixture drop,
delay or duplicate one exact message.
"""

from __future__ import annotations

import random
from collections.abc import Callable

import attrs


@attrs.define
class Window:
    """A fault active on the link (src, dst) during [start, end); `None` matches any party."""

    start: int
    end: int
    src: str | None
    dst: str | None
    loss: float = 1.0
    extra_delay_ms: int = 0

    def matches(self, t: int, src: str, dst: str) -> bool:
        return self.start <= t < self.end and self.src in (None, src) and self.dst in (None, dst)


Rule = Callable[[int, str, str, object], list[int] | None]
"""A scripted rule: given (t, src, dst, message) return delivery delays (empty = drop), or
None to let the network decide."""


@attrs.define
class Network:
    rng: random.Random
    min_delay_ms: int = 5
    max_delay_ms: int = 200
    loss: float = 0.0
    duplicate: float = 0.0
    spike: float = 0.0
    spike_ms: int = 6_000
    windows: list[Window] = attrs.Factory(list)
    rules: list[Rule] = attrs.Factory(list)
    healed_at: int | None = None

    def delays(self, t: int, src: str, dst: str, message: object) -> list[int]:
        """Delivery delays for one send: [] when lost, two entries when duplicated."""
        for rule in self.rules:
            scripted = rule(t, src, dst, message)
            if scripted is not None:
                return scripted
        healed = self.healed_at is not None and t >= self.healed_at
        extra = 0
        for window in self.windows:
            if window.matches(t, src, dst):
                if self.rng.random() < window.loss:
                    return []
                extra += window.extra_delay_ms
        if not healed and self.rng.random() < self.loss:
            return []
        copies = 2 if not healed and self.rng.random() < self.duplicate else 1
        result = []
        for _ in range(copies):
            delay = self.rng.randint(self.min_delay_ms, self.max_delay_ms) + extra
            if not healed and self.rng.random() < self.spike:
                delay += self.rng.randint(1, self.spike_ms)
            result.append(delay)
        return result
