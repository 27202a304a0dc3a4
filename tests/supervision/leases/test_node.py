"""The Node-side lease machine: its table, request ids, the tripwire, fail-closed."""

from __future__ import annotations

import pytest

from supervision.leases import (
    CleanupConfirmed,
    GrantArrived,
    HostResumed,
    Ignored,
    Launch,
    LeaseRules,
    MachineLeaseGrant,
    NodeLeaseState,
    NodePhase,
    Reading,
    SendRequest,
    Wake,
    WorkArrived,
    node_observe,
    node_restarted,
    node_step,
)

GRANT = MachineLeaseGrant(
    "a1", 1, "n1.b1-1", 1, 0, 0, "2026-11-30T01:00:00.000Z", "2026-11-30T01:00:30.000Z"
)
EVENTS = [
    Launch(1),
    Wake(),
    GrantArrived(GRANT),
    WorkArrived("w", 1),
    HostResumed(),
    CleanupConfirmed(1),
]


def _now(t: int) -> Reading:
    return Reading(t, 1_800_000_000_000 + t)


@pytest.mark.parametrize("phase", list(NodePhase))
@pytest.mark.parametrize("event", EVENTS, ids=lambda e: type(e).__name__)
def test_every_phase_event_pair_is_handled_or_explicitly_ignored(
    phase: NodePhase, event: object
) -> None:
    """Walks the whole table: every pair yields a state and actions; gaps say Ignored."""
    epoch = 0 if phase is NodePhase.IDLE else 1  # a launched phase always has an epoch
    state = NodeLeaseState(
        node_id="n1", assignment_id="a1", boot="n1.b1", phase=phase, lease_epoch=epoch
    )
    observed, _ = node_observe(state, _now(0))
    new, actions = node_step(state, event, _now(0))  # type: ignore[arg-type]
    assert isinstance(new, NodeLeaseState)
    if any(isinstance(a, Ignored) for a in actions):
        assert new == observed
    if phase in (NodePhase.RUNNING, NodePhase.STOPPING) and isinstance(event, Launch):
        # Launch(1) at epoch 1 is a duplicate; the table has no Launch while executing.
        assert new.lease_epoch == state.lease_epoch  # never two epochs at once


def test_request_ids_are_never_reused_across_restarts() -> None:
    """Each request has a new id; after a restart the boot prefix changes."""
    state = NodeLeaseState(node_id="n1", assignment_id="a1", boot="n1.b1")
    seen = set()
    state, actions = node_step(state, Launch(1), _now(0))
    for t in range(6_000, 60_000, 6_000):  # each wake after the round trip asks anew
        state, actions = node_step(state, Wake(), _now(t))
        seen |= {
            a.request.request_id for a in actions if isinstance(a, SendRequest) and not a.retry
        }
    state, _ = node_restarted(state, "n1.b2")
    state, _ = node_step(state, Launch(2), _now(70_000))
    assert state.outstanding is not None
    assert state.outstanding.request.request_id not in seen
    assert len(seen) >= 8


def test_grant_with_non_positive_lifetime_is_refused() -> None:
    """A grant that leaves no lifetime (first send + 30 - 2 <= receive) is refused."""
    state = NodeLeaseState(node_id="n1", assignment_id="a1", boot="n1.b1")
    state, _ = node_step(state, Launch(1), _now(0))
    late_anchor = LeaseRules(deadline_anchor=lambda first, receive: first - 30_000)
    new, actions = node_step(state, GrantArrived(GRANT), _now(1_000), late_anchor)
    assert new == state
    assert [type(a).__name__ for a in actions] == ["GrantRefused"]
