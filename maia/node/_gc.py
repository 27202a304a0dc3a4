"""The garbage collector's settings for a long-running Node process.

A Node allocates many short-lived objects per turn (frames, events, rows); with CPython's
default first-generation threshold (700) the collector runs a young collection every few
turns and, every hundred or so, walks the whole heap, which after start holds the registry,
the schemas and attrs' generated classes: objects that live as long as the process.
`gc.freeze()` moves what exists once the Node is ready into the permanent generation, so full
collections no longer walk it, and a larger first threshold makes young collections rarer.
Reference cycles are still collected; only how often the collector looks changes.
"""

from __future__ import annotations

import gc
from typing import Final

YOUNG_THRESHOLD: Final = 20_000  # allocations between young collections (CPython: 700)


def tune_collector() -> None:
    """Freeze the objects alive now (the Node is up) and collect the young generation less
    often; called once, in the Node's own process, after it is ready."""
    gc.collect()
    gc.freeze()
    _, second, third = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, second, third)
