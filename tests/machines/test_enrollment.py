"""machine.enroll / revoke / list / show through the handlers, on real storage."""

from __future__ import annotations

from typing import Any

import pytest

from actors.machine import Credential, authenticate_write, parse_token, redeem_write
from maia.core import MaiaError, check
from maia.protocol import MachineChangeConfirmInput, MachineChangeInput, MachineRef
from maia.service import ServiceContext
from maia.service._machines import (
    machine_enroll_confirm,
    machine_enroll_preview,
    machine_list,
    machine_revoke_confirm,
    machine_revoke_preview,
    machine_show,
)


async def _enroll(ctx: ServiceContext, name: str, command: str = "c1") -> Any:
    preview = await machine_enroll_preview(ctx, MachineChangeInput(command, name))
    return await machine_enroll_confirm(ctx, MachineChangeConfirmInput(
        command, name, preview.input_digest, preview.preview_id, preview.proof))  # fmt: skip


async def _revoke(ctx: ServiceContext, name: str, command: str = "r1") -> Any:
    preview = await machine_revoke_preview(ctx, MachineChangeInput(command, name))
    return await machine_revoke_confirm(ctx, MachineChangeConfirmInput(
        command, name, preview.input_digest, preview.preview_id, preview.proof))  # fmt: skip


async def test_enroll_answers_a_token_that_is_never_stored(ctx: ServiceContext) -> None:
    """The confirm answers a one-time token naming the machine; neither the receipt nor any
    row holds it, and a replay of the command answers the same token."""
    out = await _enroll(ctx, "big-box")
    assert out.machine.state == "pending"
    assert out.machine.incarnation == 1
    parts = parse_token(out.token)
    assert parts is not None
    assert parts.machine_id == out.machine.machine_id
    dump = await ctx.read(
        lambda c: "\n".join(
            str(r)
            for t in ("receipts", "machines", "machine_keys", "events")
            for r in c.execute(f"SELECT * FROM {t}")
        )
    )
    assert out.token not in dump
    again = await _replay(ctx, "big-box", "c1")
    assert again.delivery == "duplicate"
    assert again.token == out.token


async def _replay(ctx: ServiceContext, name: str, command: str) -> Any:
    # a retried confirm: the proof was spent, the stored answer comes back
    preview_digest = await machine_enroll_preview(ctx, MachineChangeInput("other", name))
    return await machine_enroll_confirm(ctx, MachineChangeConfirmInput(
        command, name, preview_digest.input_digest, "preview_x", "spent"))  # fmt: skip


async def test_confirm_without_preview_is_refused(ctx: ServiceContext) -> None:
    """A confirm with no proof is confirmation_required and creates nothing."""
    with pytest.raises(MaiaError) as error:
        await machine_enroll_confirm(ctx, MachineChangeConfirmInput("c1", "box"))
    assert error.value.code == "confirmation_required"
    assert (await machine_list(ctx, check_list())).machines == ()


def check_list() -> Any:
    from maia.protocol import MachineListInput

    return MachineListInput()


async def test_token_redeems_once_then_credential_authenticates(ctx: ServiceContext) -> None:
    """The token gives one credential; the second redemption is refused; the credential
    authenticates with its incarnation and revision, a wrong incarnation is refused."""
    out = await _enroll(ctx, "box")
    now = ctx.now()
    record, credential = await ctx.store.write(lambda c: redeem_write(c, out.token, "node_a", now))
    assert record.state.value == "enrolled"
    with pytest.raises(MaiaError) as error:
        await ctx.store.write(lambda c: redeem_write(c, out.token, "node_a", now))
    assert error.value.details["reason"] == "token_spent"
    good = Credential(credential, 1, record.revocation_revision, record.revocation_revision)
    found, refusal = await ctx.store.write(lambda c: authenticate_write(c, good, now))
    assert refusal is None
    assert found is not None
    assert found.name == "box"
    wrong = Credential(credential, 2, record.revocation_revision, 0)
    _, refusal = await ctx.store.write(lambda c: authenticate_write(c, wrong, now))
    assert refusal is not None
    assert refusal.details["reason"] == "unknown_incarnation"
    shown = await machine_show(ctx, MachineRef("box"))
    assert shown.machine.link is not None
    assert not shown.machine.link.connected


async def test_revoked_credential_is_refused_and_fresh_enrollment_recovers(
    ctx: ServiceContext,
) -> None:
    """After revoke the credential is refused (revoked); a fresh enrollment makes incarnation 2
    whose new credential authenticates while the old one stays refused."""
    out = await _enroll(ctx, "box")
    now = ctx.now()
    record, old = await ctx.store.write(lambda c: redeem_write(c, out.token, "node_a", now))
    revoked = await _revoke(ctx, "box")
    assert revoked.machine.state == "revoked"
    stale = Credential(old, 1, record.revocation_revision, record.revocation_revision)
    _, refusal = await ctx.store.write(lambda c: authenticate_write(c, stale, now))
    assert refusal is not None
    assert refusal.details["reason"] == "revoked"
    fresh = await _enroll(ctx, "box", "c2")
    assert fresh.machine.incarnation == 2
    record2, new = await ctx.store.write(lambda c: redeem_write(c, fresh.token, "node_a", now))
    ok = Credential(new, 2, record2.revocation_revision, record2.revocation_revision)
    assert (await ctx.store.write(lambda c: authenticate_write(c, ok, now)))[1] is None
    stale2 = Credential(old, 1, 0, 0)
    assert (await ctx.store.write(lambda c: authenticate_write(c, stale2, now)))[1] is not None


async def test_observed_revision_above_record_marks_recovery_required(
    ctx: ServiceContext,
) -> None:
    """A Node that has seen a revocation revision above Control's record proves a rollback:
    the registration is recovery-required (committed) and refused from then on."""
    out = await _enroll(ctx, "box")
    now = ctx.now()
    record, credential = await ctx.store.write(lambda c: redeem_write(c, out.token, "n", now))
    ahead = Credential(credential, 1, record.revocation_revision, record.revocation_revision + 5)
    _, refusal = await ctx.store.write(lambda c: authenticate_write(c, ahead, now))
    assert refusal is not None
    assert refusal.details["reason"] == "recovery_required"
    shown = await machine_show(ctx, MachineRef("box"))
    assert shown.machine.recovery_required
    honest = Credential(credential, 1, record.revocation_revision, record.revocation_revision)
    _, refusal = await ctx.store.write(lambda c: authenticate_write(c, honest, now))
    assert refusal is not None
    assert refusal.details["reason"] == "recovery_required"


async def test_enrolled_name_cannot_be_enrolled_again(ctx: ServiceContext) -> None:
    """Enrolling an enrolled name is invalid_state naming it; revoking a revoked one too."""
    out = await _enroll(ctx, "box")
    now = ctx.now()
    await ctx.store.write(lambda c: redeem_write(c, out.token, "n", now))
    with pytest.raises(MaiaError) as error:
        await machine_enroll_preview(ctx, MachineChangeInput("c9", "box"))
    assert error.value.code == "invalid_state"
    await _revoke(ctx, "box")
    with pytest.raises(MaiaError) as error:
        await machine_revoke_preview(ctx, MachineChangeInput("r9", "box"))
    assert error.value.code == "invalid_state"


def test_bad_name_is_refused_naming_the_field() -> None:
    """A name outside the grammar is validation_failed at `name`."""
    with pytest.raises(MaiaError) as error:
        check(MachineChangeInput, {"commandId": "c1", "name": "Big Box"}, root="params")
    assert error.value.code == "validation_failed"
    assert "name" in error.value.message


async def test_a_machine_that_does_not_exist_is_named_by_its_field(ctx: ServiceContext) -> None:
    """`machine.show` and `machine.revoke` of a name no machine has: resource_not_found
    naming the field (`details.path: name`, the message beginning `name: `), as other
    references do; nothing is written."""
    show = machine_show(ctx, MachineRef("nobox"))
    revoke = machine_revoke_preview(ctx, MachineChangeInput("r9", "nobox"))
    for call in (show, revoke):
        with pytest.raises(MaiaError) as refused:
            await call
        assert refused.value.code == "resource_not_found"
        assert refused.value.details["path"] == "name"
        assert refused.value.message.startswith("name: machine nobox")
    assert (await machine_list(ctx, check_list())).machines == ()
