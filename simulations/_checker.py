"""The invariants, judged from an independent record of what happened: the one rule set
the simulated world and the checker of real-run traces (`simulations._trace`) both feed.

The checker does not ask the machines whether they behaved: it keeps its own model
(every grant issued with its issue reading, every status Control accepted, every
discontinuity as the faults caused it, every process tree alive, every evidence record
stored and acknowledged) and judges each decision against it:
- `two_executions`: never two live executions of one assignment;
- `replacement_before_cleanup`: Control launches a new epoch of an assignment only after it
  heard a `stopped` report for every earlier epoch from the Node that held it (item 10);
- `record_not_once`: every acknowledged evidence record is stored exactly once;
- `deadline_after_horizon`: a Node's local deadline never falls after Control's horizon;
- `placement_without_item9`: work is placed only when item 9 holds;
- `replay_changed_state`: a replayed or refused message changes nothing;
- `admission_without_lease`: a Node admits work only under a valid local lease;
- `no_liveness`: once the faults heal, work is placed again within `LIVENESS_BOUND_MS`.
"""

from __future__ import annotations

import attrs

from supervision.leases import (
    HEARTBEAT_INTERVAL_MS,
    HEARTBEAT_MISSES,
    MachineLeaseGrant,
    NodeStatus,
)

LIVENESS_BOUND_MS = 120_000

RunKey = tuple[str, int, str]
"""(node, lease epoch, run): one process tree; the simulation leaves `run` empty."""


@attrs.frozen
class Violation:
    seed: int
    invariant: str
    at_ms: int
    detail: str


@attrs.define
class _Issued:
    grant: MachineLeaseGrant
    issued_mono: int
    order: int


@attrs.define
class Checker:
    seed: int
    violations: list[Violation] = attrs.Factory(list)
    checks: int = 0
    issued: dict[tuple[str, int], list[_Issued]] = attrs.Factory(dict)
    statuses: dict[str, NodeStatus] = attrs.Factory(dict)
    heartbeats: dict[str, int] = attrs.Factory(dict)
    discontinuity_order: int = -1
    order: int = 0
    placements: dict[str, list[int]] = attrs.Factory(dict)
    live: dict[str, list[RunKey]] = attrs.Factory(dict)
    launched: dict[str, dict[int, str]] = attrs.Factory(dict)
    stopped: set[tuple[str, str, int]] = attrs.Factory(set)
    stored: dict[str, dict[int, int]] = attrs.Factory(dict)
    acknowledged: dict[str, int] = attrs.Factory(dict)

    def fail(self, invariant: str, t: int, detail: str) -> None:
        self.violations.append(Violation(self.seed, invariant, t, detail))

    def check(self, ok: bool, invariant: str, t: int, detail: str) -> None:
        self.checks += 1
        if not ok:
            self.fail(invariant, t, detail)

    # What Control did and heard ---------------------------------------------------------

    def discontinuity(self) -> None:
        """Control suffered one (restart, resume, a wall step beyond the budget): ground
        truth from the fault, not from Control's own detection."""
        self.order += 1
        self.discontinuity_order = self.order

    def grant_issued(self, grant: MachineLeaseGrant, control_mono: int) -> None:
        self.order += 1
        key = (grant.assignment_id, grant.lease_epoch)
        self.issued.setdefault(key, []).append(_Issued(grant, control_mono, self.order))

    def status_delivered(self, status: NodeStatus, control_mono: int) -> None:
        """Control heard `status`; like Control, keep only the newest per Node."""
        last = self.statuses.get(status.node_id)
        if last is None or status.report_sequence > last.report_sequence:
            self.statuses[status.node_id] = status
            self.heartbeats[status.node_id] = control_mono
            for report in status.reports:
                if report.phase == "stopped":
                    self.stopped.add((status.node_id, report.assignment_id, report.lease_epoch))

    def launch(self, t: int, node_id: str, assignment_id: str, epoch: int) -> None:
        """Control launches `epoch` of `assignment_id` on `node_id` (a re-send changes
        nothing): every earlier epoch must be reconciled by a `stopped` report."""
        epochs = self.launched.setdefault(assignment_id, {})
        if epoch in epochs:
            return
        for earlier, holder in sorted(epochs.items()):
            self.check(
                (holder, assignment_id, earlier) in self.stopped,
                "replacement_before_cleanup",
                t,
                f"{assignment_id}: epoch {epoch} on {node_id} launched before {holder} "
                f"reported epoch {earlier} stopped",
            )
        epochs[epoch] = node_id

    # What ran ---------------------------------------------------------------------------

    def run_started(
        self, t: int, node_id: str, assignment_id: str, epoch: int, run: str = ""
    ) -> None:
        """A process tree for the assignment's epoch started: no other may be alive."""
        live = self.live.setdefault(assignment_id, [])
        others = [key for key in live if key != (node_id, epoch, run)]
        self.check(
            not others,
            "two_executions",
            t,
            f"{assignment_id}: {node_id} epoch {epoch} starts while "
            + ", ".join(f"{n} epoch {e}" + (f" run {r}" if r else "") for n, e, r in others)
            + " runs",
        )
        live.append((node_id, epoch, run))

    def run_ended(self, node_id: str, assignment_id: str, epoch: int, run: str = "") -> None:
        """That process tree is gone (confirmed, not assumed)."""
        live = self.live.get(assignment_id, [])
        if (node_id, epoch, run) in live:
            live.remove((node_id, epoch, run))

    # Evidence ---------------------------------------------------------------------------

    def record_stored(self, t: int, source: str, sequence: int) -> None:
        """Control wrote record `sequence` of `source` into its journal."""
        copies = self.stored.setdefault(source, {})
        copies[sequence] = copies.get(sequence, 0) + 1
        self.check(
            copies[sequence] == 1,
            "record_not_once",
            t,
            f"{source}#{sequence} stored {copies[sequence]} times",
        )

    def record_acknowledged(self, t: int, source: str, through: int) -> None:
        """Control acknowledged `source` through `through`: each of those is stored once."""
        copies = self.stored.get(source, {})
        done = self.acknowledged.get(source, 0)
        for sequence in range(done + 1, through + 1):
            count = copies.get(sequence, 0)
            self.check(
                count == 1,
                "record_not_once",
                t,
                f"{source}#{sequence} acknowledged but stored {count} times",
            )
        self.acknowledged[source] = max(done, through)

    def placement(
        self,
        t: int,
        node_id: str,
        assignment_id: str,
        epoch: int,
        control_mono: int,
        admitted: bool,
    ) -> None:
        """Item 9, judged from the checker's own record."""
        self.placements.setdefault(assignment_id, []).append(t)
        where = f"{assignment_id}@{node_id} epoch {epoch}"
        beat = self.heartbeats.get(node_id)
        self.check(
            beat is not None and (control_mono - beat) // HEARTBEAT_INTERVAL_MS < HEARTBEAT_MISSES,
            "placement_without_item9",
            t,
            f"{where}: four heartbeats missed",
        )
        self.check(admitted, "placement_without_item9", t, f"{where}: registration not admitted")
        grants = self.issued.get((assignment_id, epoch), [])
        newest = grants[-1] if grants else None
        status = self.statuses.get(node_id)
        report = None
        if status is not None:
            report = next((r for r in status.reports if r.assignment_id == assignment_id), None)
        confirmed = (
            newest is not None
            and report is not None
            and report.phase == "running"
            and report.lease_epoch == epoch
            and report.applied_request_id == newest.grant.request_id
            and report.applied_renewal_sequence == newest.grant.renewal_sequence
        )
        self.check(confirmed, "placement_without_item9", t, f"{where}: newest grant unconfirmed")
        if newest is None:
            return
        self.check(
            newest.order > self.discontinuity_order,
            "placement_without_item9",
            t,
            f"{where}: barrier: newest grant issued before the discontinuity",
        )
        self.check(
            control_mono < newest.issued_mono + newest.grant.duration_ms,
            "placement_without_item9",
            t,
            f"{where}: horizon reached",
        )

    def liveness(self, heal_ms: int, end_ms: int, assignments: tuple[str, ...]) -> None:
        """Each assignment gets work placed within the bound once the faults heal."""
        if end_ms < heal_ms + LIVENESS_BOUND_MS:
            return
        for assignment_id in assignments:
            times = self.placements.get(assignment_id, [])
            self.check(
                any(heal_ms <= t <= heal_ms + LIVENESS_BOUND_MS for t in times),
                "no_liveness",
                heal_ms + LIVENESS_BOUND_MS,
                f"{assignment_id}: no placement within {LIVENESS_BOUND_MS} ms of healing",
            )
