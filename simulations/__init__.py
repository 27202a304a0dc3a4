"""A deterministic simulation harness: virtual clocks, a fault-injecting network, named
lease and restart fixtures, and random schedules checked against invariants."""
