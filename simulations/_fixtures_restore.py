"""The named restore fixtures (spec MN0, restore and rollback).

Ordinary lag is refused as stale and recovers by renewal; only a contradiction proves a
rollback; a restore is administrator recovery, so the procedure — not detection — marks
registrations recovery-required, even where no contradiction exists.
"""

from __future__ import annotations

from supervision.leases import (
    EvidenceSpool,
    MachineLeaseReport,
    NodeStatus,
    Presented,
    RegistrationRecord,
    RollbackProven,
    StatusArrived,
    Verdict,
    acknowledge,
    enroll_fresh,
    judge,
    new_control,
    restore_control,
    revoke,
    rotate,
    set_registration,
)

from ._duo import Duo, Expect


def _presented(record: RegistrationRecord, spool_last: dict[str, int] | None = None) -> Presented:
    """What a Node in step with `record` presents (with its spool's last sequences)."""
    return Presented(
        node_id=record.node_id,
        incarnation=record.incarnation,
        credential_revision=record.revocation_revision,
        observed_revocation_revision=record.revocation_revision,
        spool_last=spool_last or {},
    )


def ordinary_lag(expect: Expect) -> None:
    """A Node offline through a rotation presents a lower revision: stale, not a rollback."""
    record = RegistrationRecord("n1", revocation_revision=1)
    lagging = _presented(record)
    record = rotate(record)
    record, verdict = judge(record, lagging)
    expect.equal(verdict, Verdict.STALE, "a stale credential is refused as stale")
    expect(not record.recovery_required, "ordinary lag proves nothing")
    record, verdict = judge(record, _presented(record))
    expect.equal(verdict, Verdict.ACCEPTED, "renewal or rotation recovers")


def unilateral(expect: Expect) -> None:
    """Control restored alone, or the Node restored alone: the contradiction is proven."""
    current = rotate(rotate(RegistrationRecord("n1")))
    node_view = _presented(current)
    backup = RegistrationRecord("n1", revocation_revision=1)  # Control restored to this
    restored, verdict = judge(backup, node_view)
    expect.equal(verdict, Verdict.RECOVERY_REQUIRED, "observed revision above the record")
    expect(restored.recovery_required, "Control alone: the registration is recovery-required")
    procedure = restore_control({"n1": backup})["n1"]
    expect(procedure.recovery_required, "the restore procedure marks it without detection")
    record = acknowledge(RegistrationRecord("n1"), "n1.a1", 10)
    lost = _presented(record, spool_last={"n1.a1": 4})
    record, verdict = judge(record, lost)
    expect.equal(verdict, Verdict.RECOVERY_REQUIRED, "lastSequence below an acknowledgement")
    control = new_control("ctl", ("a1",), ("n1",))
    control = set_registration(control, acknowledge(RegistrationRecord("n1"), "n1.a1", 10))
    spool = EvidenceSpool("n1.a1").append(64, 0)  # the restored Node's spool: last = 1
    report = MachineLeaseReport("a1", 1, "stopped", None, None, 0, spool.status(0))
    duo = Duo(control=control)
    actions = duo.control_do(StatusArrived(NodeStatus("n1", 1, 1, (report,))), 0)
    expect(any(isinstance(a, RollbackProven) for a in actions), "the lease machine sees it")
    expect(not duo.control.nodes["n1"].registration.admits, "no grant for it any more")
    fresh = enroll_fresh(record)
    _, verdict = judge(fresh, lost)
    expect.equal(verdict, Verdict.UNKNOWN_INCARNATION, "the discarded enrollment is gone")
    _, verdict = judge(fresh, _presented(fresh))
    expect.equal(verdict, Verdict.ACCEPTED, "a fresh enrollment recovers")


def matching(expect: Expect) -> None:
    """Both sides restored to the same point: no contradiction exists, so only the
    procedure protects — it marks every registration recovery-required."""
    backup = rotate(RegistrationRecord("n1"))
    node_backup = _presented(backup)
    _, verdict = judge(backup, node_backup)
    expect.equal(verdict, Verdict.ACCEPTED, "detection cannot see a matching restore")
    restored = restore_control({"n1": backup})["n1"]
    _, verdict = judge(restored, node_backup)
    expect.equal(verdict, Verdict.RECOVERY_REQUIRED, "the procedure refuses the registration")
    fresh = enroll_fresh(restored)
    _, verdict = judge(fresh, _presented(fresh))
    expect.equal(verdict, Verdict.ACCEPTED, "administrator recovery ends in a fresh enrollment")
    expect(fresh.incarnation == backup.incarnation + 1, "with a new registration incarnation")


def revoked_credential(expect: Expect) -> None:
    """A credential revoked after the backup stays refused after a restore of both sides."""
    backup = RegistrationRecord("n1")
    node_backup = _presented(backup)
    live = revoke(backup)
    _, verdict = judge(live, node_backup)
    expect.equal(verdict, Verdict.REVOKED, "before the restore: the credential is refused")
    _, verdict = judge(live, _presented(live))
    expect.equal(verdict, Verdict.REVOKED, "a revoked registration admits nothing, even current")
    _, verdict = judge(backup, node_backup)
    expect.equal(verdict, Verdict.ACCEPTED, "copied back outside the procedure it would pass")
    restored = restore_control({"n1": backup})["n1"]
    _, verdict = judge(restored, node_backup)
    expect.equal(verdict, Verdict.RECOVERY_REQUIRED, "the procedure keeps it refused")
    fresh = enroll_fresh(restored)
    _, verdict = judge(fresh, node_backup)
    expect.equal(verdict, Verdict.UNKNOWN_INCARNATION, "the old credential never returns")


RESTORE_FIXTURES = {
    "restore-ordinary-lag": ordinary_lag,
    "restore-unilateral": unilateral,
    "restore-matching": matching,
    "restore-revoked-credential": revoked_credential,
}
