"""machine.enroll.preview/confirm, machine.revoke.preview/confirm, machine.list, machine.show.

A preview judges the change as its confirm will (an enrolled name cannot be enrolled again
before a revoke; a revoked one cannot be revoked) and issues a one-time proof bound to the
actor, the confirm's operation and the digest of the input. The confirm spends the proof and
writes the row, its event and the receipt in one transaction (`storage.run_mutation`). The
enroll confirm's answer carries the one-time token, derived again from the row on every
answer (a replay included) and never stored: the receipt holds the machine, not the token.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Awaitable, Callable
from typing import Any, Final

import attrs
import orjson

from actors.machine import (
    MACHINES,
    OWNER_TYPE,
    MachineRecord,
    MachineService,
    enroll_write,
    get_machine,
    judge_enroll,
    judge_revoke,
    list_machines,
    revoke_write,
    token_of,
)
from maia.core import MaiaError, check, digest_json, format_timestamp_ms
from maia.protocol import (
    MachineChangeConfirmInput,
    MachineChangeInput,
    MachineChangePreviewOutput,
    MachineEnrollOutput,
    MachineListInput,
    MachineListOutput,
    MachineRef,
    MachineRevokeOutput,
    MachineShowOutput,
)
from storage import (
    Applied,
    Confirmation,
    ExpectedTarget,
    MutationKey,
    ReceiptTarget,
    find_receipt,
    issue_preview,
    run_mutation,
)

from ._context import ServiceContext, not_found
from ._kinds import running_kind
from ._machines_views import machine_wire

_PREVIEW_TTL_MS: Final = 120_000


def _digest(action: str, name: str) -> str:
    return digest_json({"action": action, "name": name})


async def _service(ctx: ServiceContext) -> MachineService:
    """The machine kind, opened on its first use (`_kinds`)."""
    return await running_kind(ctx.runtime, MACHINES)


async def _preview(ctx: ServiceContext, action: str, params: MachineChangeInput,
                   judge: Callable[[sqlite3.Connection], MachineRecord | None],
                   next_incarnation: Callable[[MachineRecord | None], int],
                   ) -> MachineChangePreviewOutput:  # fmt: skip
    digest = _digest(action, params.name)

    def preview(conn: sqlite3.Connection) -> dict[str, Any]:
        # A retry of a command that already confirmed this change is not judged again (the
        # machine moved since: revoked): its confirm answers the stored result, `duplicate`.
        stored = find_receipt(conn, actor_id=ctx.actor_id, operation_id=f"machine.{action}"
                              ".confirm", command_id=params.command_id)  # fmt: skip
        replay = stored is not None and stored.normalized_input_digest == digest
        record = get_machine(conn, name=params.name) if replay else judge(conn)
        target = ExpectedTarget(OWNER_TYPE, params.name, None if record is None else
                                record.revision)  # fmt: skip
        issued = issue_preview(conn, actor_id=ctx.actor_id,
                               operation_id=f"machine.{action}.confirm", input_digest=digest,
                               targets=(target,), clock=ctx.clock,
                               node_epoch=ctx.store.node_epoch, ttl_ms=_PREVIEW_TTL_MS)  # fmt: skip
        wire: dict[str, Any] = {"action": action, "name": params.name,
                                "incarnation": next_incarnation(record), "inputDigest": digest,
                                "previewId": issued.preview_id, "proof": issued.proof,
                                "expiresAt": format_timestamp_ms(issued.expires_ms)}  # fmt: skip
        if record is not None:
            wire["machineId"] = record.machine_id
        return wire

    return check(MachineChangePreviewOutput, await ctx.store.write(preview), root="result")


async def machine_enroll_preview(
    ctx: ServiceContext, params: MachineChangeInput
) -> MachineChangePreviewOutput:
    """Raises `invalid_state` (enrolled), `saturated`."""
    return await _preview(ctx, "enroll", params, lambda c: judge_enroll(c, params.name),
                          lambda r: 1 if r is None else r.incarnation + 1)  # fmt: skip


async def machine_revoke_preview(
    ctx: ServiceContext, params: MachineChangeInput
) -> MachineChangePreviewOutput:
    """Raises `resource_not_found`, `invalid_state` (revoked)."""
    return await _preview(ctx, "revoke", params, lambda c: judge_revoke(c, params.name),
                          lambda r: r.incarnation if r is not None else 1)  # fmt: skip


def _confirmation(operation_id: str, params: MachineChangeConfirmInput, digest: str) -> None:
    if params.preview_id is None or params.proof is None or params.input_digest is None:
        raise MaiaError("confirmation_required", f"{operation_id} needs a preview and its proof",
                        {"method": operation_id})  # fmt: skip
    if params.input_digest != digest:
        raise MaiaError("preview_mismatch", f"inputDigest does not match preview "
                        f"{params.preview_id}", {"previewId": params.preview_id})  # fmt: skip


async def _confirm(ctx: ServiceContext, action: str, params: MachineChangeConfirmInput,
                   write: Callable[[sqlite3.Connection, int], tuple[MachineRecord, str]],
                   ) -> Any:  # fmt: skip
    operation_id = f"machine.{action}.confirm"
    digest = _digest(action, params.name)
    _confirmation(operation_id, params, digest)
    now = ctx.now()

    def apply(conn: sqlite3.Connection) -> Applied:
        before = get_machine(conn, name=params.name)
        record, event_id = write(conn, now)  # its own refusals first (invalid_state, ...)
        _check_fresh(conn, params, before)
        change = "created" if record.revision == 1 else "updated"
        return Applied({"machine": machine_wire(record)}, event_ids=(event_id,),
                       targets=(ReceiptTarget(OWNER_TYPE, record.machine_id, change, None,
                                              record.revision),))  # fmt: skip

    key = MutationKey(ctx.actor_id, operation_id, params.command_id)

    def mutate(conn: sqlite3.Connection) -> dict[str, Any]:
        result = run_mutation(conn, key=key, input_digest=digest, now_ms=now, apply=apply,
                              confirmation=Confirmation(params.preview_id, params.proof),
                              clock=ctx.clock, node_epoch=ctx.store.node_epoch)  # fmt: skip
        wire = {"delivery": result.delivery, "receiptId": result.receipt.receipt_id,
                **result.result}  # fmt: skip
        if action == "enroll":
            record = get_machine(conn, machine_id=wire["machine"]["machineId"])
            assert record is not None
            wire["token"] = token_of(conn, _at_incarnation(record, wire))
            wire["tokenExpiresAt"] = wire["machine"]["tokenExpiresAt"]
        return wire

    return await ctx.store.write(mutate)


def _check_fresh(conn: sqlite3.Connection, params: MachineChangeConfirmInput,
                 before: MachineRecord | None) -> None:  # fmt: skip
    """Raises `storage_conflict` when the machine's row is not at the revision the preview
    bound (another writer moved it since: a stale preview). Inside the confirm's
    transaction, so the refusal leaves the proof unspent and the row as it was."""
    bound = _bound_revision(conn, params.preview_id or "")
    actual = None if before is None else before.revision
    if bound != actual:
        raise MaiaError("storage_conflict", f"machine {params.name} changed since preview "
                        f"{params.preview_id}; preview again",
                        {"reason": "stale_preview", "resource": "machine", "id": params.name,
                         "expected": bound, "actual": actual})  # fmt: skip


def _bound_revision(conn: sqlite3.Connection, preview_id: str) -> int | None:
    """The machine revision the preview bound (None: the name had no row then)."""
    row = conn.execute("SELECT targets FROM previews WHERE preview_id = ?", (preview_id,))
    found = row.fetchone()
    for target_type, _, revision in orjson.loads(found[0]) if found is not None else ():
        if target_type == OWNER_TYPE:
            return None if revision is None else int(revision)
    return None


def _at_incarnation(record: MachineRecord, wire: dict[str, Any]) -> MachineRecord:
    """The record at the incarnation the stored answer names (a replay after a newer
    enrollment derives that older, now dead, token: never the current one)."""
    return attrs.evolve(record, incarnation=wire["machine"]["incarnation"])


async def machine_enroll_confirm(
    ctx: ServiceContext, params: MachineChangeConfirmInput
) -> MachineEnrollOutput:
    """Raises what the preview raises, `confirmation_required`, `preview_mismatch`,
    `preview_expired`, `proof_spent`, `idempotency_conflict`."""
    wire = await _confirm(
        ctx, "enroll", params, lambda c, now: enroll_write(c, params.name, now, ctx.actor_id)
    )
    return check(MachineEnrollOutput, wire, root="result")  # fmt: skip


async def machine_revoke_confirm(
    ctx: ServiceContext, params: MachineChangeConfirmInput
) -> MachineRevokeOutput:
    """Raises what the preview raises and the confirmation errors; closes the live link."""
    wire = await _confirm(
        ctx, "revoke", params, lambda c, now: revoke_write(c, params.name, now, ctx.actor_id)
    )
    machine_id = wire["machine"]["machineId"]
    record = await ctx.read(lambda c: get_machine(c, machine_id=machine_id))
    if record is not None:  # its lease machines refuse grants and block placement from now
        (await _service(ctx)).relay.leases.set_registration(record.registration)
    (await _service(ctx)).links.revoke(machine_id)
    return check(MachineRevokeOutput, wire, root="result")  # fmt: skip


async def machine_list(ctx: ServiceContext, params: MachineListInput) -> MachineListOutput:
    """The machines, by name."""
    records = await ctx.read(list_machines)
    return check(MachineListOutput, {"machines": [machine_wire(r) for r in records]},
                 root="result")  # fmt: skip


async def machine_show(ctx: ServiceContext, params: MachineRef) -> MachineShowOutput:
    """Raises `resource_not_found`."""
    record = await ctx.read(lambda c: get_machine(c, name=params.name))
    if record is None:
        raise not_found("machine", params.name, path="name")
    service = await _service(ctx)
    link = service.links.get(record.machine_id)
    leases = service.relay.leases
    wire = machine_wire(record, link=link, now_mono_ms=ctx.clock.monotonic_ms(),
                        barrier=leases.barrier(record.machine_id))  # fmt: skip
    wire["link"]["assignments"] = len(leases.of_machine(record.machine_id))
    horizon = leases.horizon_in_ms(record.machine_id)
    if horizon is not None:
        wire["link"]["leaseHorizonInMs"] = horizon
    return check(MachineShowOutput, {"machine": wire}, root="result")


MACHINE_HANDLERS: Final[dict[str, Callable[[ServiceContext, Any], Awaitable[Any]]]] = {
    "machine.enroll.preview": machine_enroll_preview,
    "machine.enroll.confirm": machine_enroll_confirm,
    "machine.revoke.preview": machine_revoke_preview,
    "machine.revoke.confirm": machine_revoke_confirm,
    "machine.list": machine_list,
    "machine.show": machine_show,
}
