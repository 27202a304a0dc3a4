"""The Node's collector settings (maia/node/_gc.py)."""

from __future__ import annotations

import gc

from maia.node._gc import YOUNG_THRESHOLD, tune_collector


def test_tune_collector_freezes_what_is_alive_and_raises_the_young_threshold() -> None:
    """After tuning, objects alive before it are in the permanent generation (full
    collections skip them) and young collections wait for YOUNG_THRESHOLD allocations;
    the older generations' thresholds are kept."""
    before = gc.get_threshold()
    survivor = [object() for _ in range(100)]
    try:
        tune_collector()
        assert gc.get_freeze_count() >= len(survivor)
        assert gc.get_threshold() == (YOUNG_THRESHOLD, before[1], before[2])
        assert gc.isenabled()
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
