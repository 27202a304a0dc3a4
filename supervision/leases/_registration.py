"""Restore and rollback rules for one Execution Node registration, as Control records it.

From one side, ordinary lag and a rollback look alike, and a restore of both sides looks
like neither, so nothing here tries to detect a restore:
- A presented credential or grant below the current revocation revision is *stale*
  (ordinary lag): refused, and the Node recovers by rotation or renewal (or, after a
  revocation, a fresh enrollment). It proves nothing.
- Only a contradiction proves a rollback: an observed revocation revision above Control's
  record (Control was restored) or a spool lastSequence below what Control already
  acknowledged (the Node lost evidence). Either marks the registration recovery-required:
  no grant, renewal or credential is admitted until a fresh enrollment.
- Restore is administrator recovery: the procedure, not detection, marks every registration
  of a restored Control Node recovery-required and makes a restored Node discard its
  enrollment, spool and high-water store.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping

import attrs


class Verdict(enum.Enum):
    ACCEPTED = "accepted"
    STALE = "stale"
    REVOKED = "revoked"
    UNKNOWN_INCARNATION = "unknown_incarnation"
    RECOVERY_REQUIRED = "recovery_required"


@attrs.frozen
class RegistrationRecord:
    """Control's current record of one Node registration."""

    node_id: str
    incarnation: int = 1
    revocation_revision: int = 0
    revoked: bool = False
    recovery_required: bool = False
    acknowledged: Mapping[str, int] = attrs.field(factory=dict)

    @property
    def admits(self) -> bool:
        """Whether a grant, renewal or placement may be admitted for this registration."""
        return not (self.revoked or self.recovery_required)


@attrs.frozen
class Presented:
    """What a Node presents: its credential's revision and what it has observed."""

    node_id: str
    incarnation: int
    credential_revision: int
    observed_revocation_revision: int
    spool_last: Mapping[str, int] = attrs.field(factory=dict)


def contradiction(
    record: RegistrationRecord, observed: int, spool_last: Mapping[str, int]
) -> str | None:
    """The proven rollback this evidence shows, or None."""
    if observed > record.revocation_revision:
        return "observed_revision_above_record"
    for source, last in spool_last.items():
        if last < record.acknowledged.get(source, 0):
            return "spool_below_acknowledgement"
    return None


def judge(record: RegistrationRecord, presented: Presented) -> tuple[RegistrationRecord, Verdict]:
    """Compare what a Node presents with the current record. A proven rollback sticks."""
    if record.recovery_required:
        return record, Verdict.RECOVERY_REQUIRED
    if presented.incarnation != record.incarnation:
        return record, Verdict.UNKNOWN_INCARNATION
    if contradiction(record, presented.observed_revocation_revision, presented.spool_last):
        return attrs.evolve(record, recovery_required=True), Verdict.RECOVERY_REQUIRED
    if record.revoked:
        return record, Verdict.REVOKED
    if presented.credential_revision < record.revocation_revision:
        return record, Verdict.STALE
    return record, Verdict.ACCEPTED


def rotate(record: RegistrationRecord) -> RegistrationRecord:
    """A rotation or grant change: the revision moves on, older credentials turn stale."""
    return attrs.evolve(record, revocation_revision=record.revocation_revision + 1)


def revoke(record: RegistrationRecord) -> RegistrationRecord:
    """A revocation: stale for good; only a fresh enrollment recovers."""
    return attrs.evolve(record, revocation_revision=record.revocation_revision + 1, revoked=True)


def acknowledge(record: RegistrationRecord, source: str, through: int) -> RegistrationRecord:
    """Record a cumulative acknowledgement (never lowered)."""
    if through <= record.acknowledged.get(source, 0):
        return record
    return attrs.evolve(record, acknowledged={**record.acknowledged, source: through})


def restore_control(records: Mapping[str, RegistrationRecord]) -> dict[str, RegistrationRecord]:
    """The Control restore procedure: every registration becomes recovery-required."""
    return {key: attrs.evolve(value, recovery_required=True) for key, value in records.items()}


def enroll_fresh(record: RegistrationRecord) -> RegistrationRecord:
    """Administrator recovery ends here: a new incarnation with a clean slate."""
    return RegistrationRecord(
        node_id=record.node_id,
        incarnation=record.incarnation + 1,
        revocation_revision=record.revocation_revision + 1,
    )
