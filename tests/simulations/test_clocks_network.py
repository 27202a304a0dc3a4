"""The harness's own parts: virtual clocks and the fault-injecting network."""

from __future__ import annotations

import random

from simulations import Network, PartyClock
from simulations._network import Window


def test_monotonic_clock_stops_in_suspend_only_when_not_suspend_aware() -> None:
    """A suspend-aware clock counts through suspend; an unaware one does not."""
    aware, unaware = PartyClock(), PartyClock(suspend_aware=False)
    elapsed = []
    for clock in (aware, unaware):
        start = clock.read(0).mono
        clock.set_suspended(1_000, True)
        clock.set_suspended(11_000, False)
        elapsed.append(clock.read(12_000).mono - start)
    assert elapsed == [12_000, 2_000]


def test_wall_clock_steps_and_rate_error() -> None:
    """The wall clock takes steps and drifts by its ppm; the monotonic one is unaffected."""
    clock = PartyClock(wall_ppm=1_000)
    before = clock.read(0)
    clock.step_wall(0, 10_000)
    after = clock.read(100_000)
    assert after.wall - before.wall == 10_000 + 100_100
    assert after.mono - before.mono == 100_000
    assert clock.true_time_of(100_000, after.mono + 5_000) == 105_000


def test_network_partition_loss_and_duplication() -> None:
    """A partition window drops; duplication yields two deliveries; healing restores."""
    net = Network(random.Random(1), duplicate=1.0)
    net.windows.append(Window(0, 10, "a", "b"))
    assert net.delays(5, "a", "b", "m") == []
    assert net.delays(5, "b", "a", "m") != []
    assert len(net.delays(20, "a", "b", "m")) == 2
    net.healed_at = 30
    assert len(net.delays(40, "a", "b", "m")) == 1


def test_network_scripted_rule_wins() -> None:
    """A scripted rule decides one exact message before any random draw."""
    net = Network(random.Random(1), loss=1.0)
    net.rules.append(lambda t, src, dst, message: [7] if message == "keep" else None)
    assert net.delays(0, "a", "b", "keep") == [7]
    assert net.delays(0, "a", "b", "other") == []
