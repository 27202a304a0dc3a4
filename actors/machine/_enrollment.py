"""Enrollment, revocation and authentication of Execution Nodes, as storage writes.

`enroll_write` issues a token (a new row, or a fresh registration incarnation of a pending
or revoked name); `redeem_write` spends a token once and makes the credential; `revoke_write`
revokes; `authenticate_write` judges a presented credential by the MN0 registration rules
(`supervision.leases.judge`): a revoked, stale or unknown-incarnation credential is refused,
and a contradiction (an observed revocation revision above Control's record) marks the
registration recovery-required, which only a fresh enrollment ends. Every refusal is
`unauthenticated` with `details.reason`; nothing is written for one, except the
recovery-required mark a proven rollback sets.
"""

from __future__ import annotations

import hmac
import sqlite3
from typing import Final

import attrs

from maia.core import MaiaError
from storage import append_event
from supervision.leases import Presented, Verdict, judge

from ._secrets import (
    credential_machine,
    listener_fingerprint,
    make_credential,
    make_token,
    matches,
    new_machine_id,
    parse_token,
    pin_token,
    sha256_hex,
    token_key,
)
from ._sql import (
    MAX_MACHINES,
    MachineRecord,
    MachineState,
    count_machines,
    get_machine,
    insert_pending,
    update_machine,
)

TOKEN_TTL_MS: Final = 10 * 60_000
OWNER_TYPE: Final = "machine"


def refused(reason: str, message: str) -> MaiaError:
    return MaiaError("unauthenticated", message, {"reason": reason})


def _event(conn: sqlite3.Connection, record: MachineRecord, event_type: str, now_ms: int,
           actor_id: str | None = None) -> str:  # fmt: skip
    payload = {"name": record.name, "incarnation": record.incarnation, "state": record.state.value}
    return append_event(conn, owner_id=record.machine_id, owner_type=OWNER_TYPE,
                        event_type=event_type, payload=payload, now_ms=now_ms,
                        aggregate_revision=record.revision, actor_id=actor_id).event_id  # fmt: skip


def judge_enroll(conn: sqlite3.Connection, name: str) -> MachineRecord | None:
    """The row an enrollment of `name` renews, or None for a new name. Raises
    `invalid_state` for an enrolled name, `saturated` beyond MAX_MACHINES."""
    record = get_machine(conn, name=name)
    if record is not None and record.state is MachineState.ENROLLED:
        raise MaiaError("invalid_state", f"machine {name} is enrolled; revoke it first",
                        {"resource": "machine", "id": name, "state": "enrolled"})  # fmt: skip
    if record is None and count_machines(conn) >= MAX_MACHINES:
        raise MaiaError("saturated", f"the Node is at capacity: {MAX_MACHINES} machines",
                        {"limit": MAX_MACHINES})  # fmt: skip
    return record


def enroll_write(conn: sqlite3.Connection, name: str, now_ms: int, actor_id: str,
                 machine_id: str | None = None) -> tuple[MachineRecord, str]:  # fmt: skip
    """(the pending row, its event ID) for a fresh enrollment of `name`."""
    found = judge_enroll(conn, name)
    expires = now_ms + TOKEN_TTL_MS
    if found is None:
        record = MachineRecord(machine_id or new_machine_id(), name, MachineState.PENDING, 1, 0,
                               None, False, None, expires, None, None, 1, now_ms, now_ms, None,
                               None)  # fmt: skip
        record = attrs.evolve(record, token_hash=sha256_hex(_token(conn, record)))
        insert_pending(conn, record)
    else:
        record = attrs.evolve(found, state=MachineState.PENDING, incarnation=found.incarnation + 1,
                              revocation_revision=found.revocation_revision + 1,
                              recovery_required=False, credential_hash=None,
                              credential_revision=None, token_expires_ms=expires,
                              revision=found.revision + 1, updated_ms=now_ms)  # fmt: skip
        record = attrs.evolve(record, token_hash=sha256_hex(_token(conn, record)))
        update_machine(conn, record)
    return record, _event(conn, record, "machine.enrollment_issued", now_ms, actor_id)


def _token(conn: sqlite3.Connection, record: MachineRecord) -> str:
    return make_token(token_key(conn), record.machine_id, record.incarnation)


def token_of(conn: sqlite3.Connection, record: MachineRecord) -> str:
    """The one-time token of `record`'s incarnation (derived again: never stored), with
    the TLS listener's certificate fingerprint when Control serves wss:// (`pin_token`)."""
    return pin_token(_token(conn, record), listener_fingerprint(conn))


def redeem_write(conn: sqlite3.Connection, token: str, execution_node_id: str,
                 now_ms: int) -> tuple[MachineRecord, str]:  # fmt: skip
    """(the enrolled row, the new credential). Raises `unauthenticated` for a token that is
    malformed, unknown, of an older incarnation, spent or expired (wall clock: the expiry
    is shown to people and survives a restart)."""
    parts = parse_token(token)
    record = None if parts is None else get_machine(conn, machine_id=parts.machine_id)
    if parts is None or record is None or parts.incarnation > record.incarnation or not (
        hmac.compare_digest(token, make_token(token_key(conn), parts.machine_id,
                                              parts.incarnation))
    ):  # fmt: skip
        raise refused("unknown_token", "the enrollment token is not one this Node issued")
    if record.state is not MachineState.PENDING or not matches(token, record.token_hash):
        raise refused("token_spent", f"the enrollment token of {record.name} was already used")
    if record.token_expires_ms is None or now_ms >= record.token_expires_ms:
        raise refused("token_expired", f"the enrollment token of {record.name} expired")
    credential = make_credential(record.machine_id)
    record = attrs.evolve(record, state=MachineState.ENROLLED, token_hash=None,
                          token_expires_ms=None, credential_hash=sha256_hex(credential),
                          credential_revision=record.revocation_revision,
                          execution_node_id=execution_node_id, enrolled_ms=now_ms,
                          last_seen_ms=now_ms, revision=record.revision + 1,
                          updated_ms=now_ms)  # fmt: skip
    update_machine(conn, record)
    _event(conn, record, "machine.enrolled", now_ms)
    return record, credential


def revoke_write(conn: sqlite3.Connection, name: str, now_ms: int,
                 actor_id: str) -> tuple[MachineRecord, str]:  # fmt: skip
    """(the revoked row, its event ID). Raises `resource_not_found`, `invalid_state`."""
    record = judge_revoke(conn, name)
    record = attrs.evolve(record, state=MachineState.REVOKED, token_hash=None,
                          token_expires_ms=None, credential_hash=None,
                          revocation_revision=record.revocation_revision + 1,
                          revision=record.revision + 1, updated_ms=now_ms)  # fmt: skip
    update_machine(conn, record)
    return record, _event(conn, record, "machine.revoked", now_ms, actor_id)


def judge_revoke(conn: sqlite3.Connection, name: str) -> MachineRecord:
    record = get_machine(conn, name=name)
    if record is None:
        raise MaiaError("resource_not_found", f"name: machine {name} does not exist",
                        {"resource": "machine", "id": name, "path": "name"})  # fmt: skip
    if record.state is MachineState.REVOKED:
        raise MaiaError("invalid_state", f"machine {name} is revoked",
                        {"resource": "machine", "id": name, "state": "revoked"})  # fmt: skip
    return record


@attrs.frozen
class Credential:
    """What an Execution Node presents on every connection."""

    credential: str
    incarnation: int
    credential_revision: int
    observed_revocation_revision: int


def authenticate_write(conn: sqlite3.Connection, presented: Credential,
                       now_ms: int) -> tuple[MachineRecord | None, MaiaError | None]:  # fmt: skip
    """(the machine `presented` authenticates, None) or (None, the `unauthenticated` refusal
    naming the reason). Returned, not raised, so a recovery-required mark commits."""
    try:
        return _authenticate(conn, presented, now_ms), None
    except MaiaError as error:
        return None, error


def _authenticate(conn: sqlite3.Connection, presented: Credential, now_ms: int) -> MachineRecord:
    machine_id = credential_machine(presented.credential)
    record = None if machine_id is None else get_machine(conn, machine_id=machine_id)
    if record is None or (
        record.credential_hash is not None and not matches(presented.credential,
                                                           record.credential_hash)
    ):  # fmt: skip
        raise refused("unknown_credential", "the machine credential is not one this Node issued")
    checked, verdict = judge(record.registration, Presented(
        node_id=record.machine_id, incarnation=presented.incarnation,
        credential_revision=presented.credential_revision,
        observed_revocation_revision=presented.observed_revocation_revision,
    ))  # fmt: skip
    if checked.recovery_required and not record.recovery_required:
        record = attrs.evolve(record, recovery_required=True, revision=record.revision + 1,
                              updated_ms=now_ms)  # fmt: skip
        update_machine(conn, record)
        _event(conn, record, "machine.recovery_required", now_ms)
    if verdict is not Verdict.ACCEPTED:
        raise refused(verdict.value, f"machine {record.name}: the credential is {verdict.value}"
                      " (enroll it again)")  # fmt: skip
    if not matches(presented.credential, record.credential_hash):
        raise refused("unknown_credential", "the machine credential is not one this Node issued")
    return record
