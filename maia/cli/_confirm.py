"""Consequential ops: preview, show the summary, ask, then confirm (spec: Mutation, preview,
confirmation, and receipt).

A consequential op `X.confirm` (its descriptor says `confirmation: required`) has a sibling
`X.preview` that takes the same input and answers an `inputDigest`, a one-time `proof` and an
expiry. `maia X confirm ...` previews, prints the preview as a summary on stderr, asks on the
terminal (refused without one unless `--yes`), then sends the confirm with the digest and
proof, and any field the confirm needs that the preview supplied (a revision). Given
`--input-digest` and `--proof` itself, it confirms directly (a script that previewed first).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import attrs

from maia.protocol import MaiaError, OperationDescriptor, Registry
from maia.protocol.shapes import class_plan

from . import _exit
from ._invocation import Invocation
from ._render import human

PROOF_FIELDS = ("inputDigest", "proof")


def _wires(cls: type | None) -> set[str]:
    return {p.wire for p in class_plan(cls)} if cls is not None and attrs.has(cls) else set()


def previews_first(op: OperationDescriptor, params: dict[str, Any]) -> bool:
    """Whether this call previews before it confirms (it carries no digest and proof yet)."""
    return op.confirmation == "required" and not all(params.get(k) for k in PROOF_FIELDS)


def preview_of(op: OperationDescriptor, registry: Registry) -> OperationDescriptor | None:
    """The preview op of a consequential op (`X.preview` beside `X.confirm`), if any."""
    stem, _, last = op.operation_id.rpartition(".")
    return registry.get(f"{stem}.preview") if last == "confirm" and stem else None


async def _ask(confirm: Callable[[str], Any] | None, prompt: str) -> bool:
    if confirm is None:
        import click

        return bool(click.confirm(prompt, default=False, err=True))
    answer = confirm(prompt)
    if inspect.isawaitable(answer):
        answer = await answer
    return bool(answer)


async def confirmed(
    client: Any,
    op: OperationDescriptor,
    params: dict[str, Any],
    invocation: Invocation,
    out: Any,
    interactive: bool,
    confirm: Callable[[str], Any] | None,
    registry: Registry,
) -> int:
    """Preview → summary → confirmation → confirm. Returns the exit code.

    Raises MaiaError from either call, and `Refused` when confirmation is declined or
    cannot be asked (no terminal, no --yes).
    """
    from ._execute import Refused, call

    if all(params.get(k) for k in PROOF_FIELDS):
        out.result(op.operation_id, await call(client, op.operation_id, params, out))
        return _exit.OK
    preview = preview_of(op, registry)
    if preview is None:
        raise MaiaError(
            "command_not_implemented",
            f"{op.operation_id} needs a confirmation but has no preview operation",
            {"operation": op.operation_id},
        )
    preview_wires = _wires(preview.input_type)
    preview_params = {k: v for k, v in params.items() if k in preview_wires}
    answer = await call(client, preview.operation_id, preview_params, out)
    if invocation.dry_run:  # the preview alone, as the result; nothing is confirmed
        out.result(preview.operation_id, answer)
        return _exit.OK
    out.stderr.write(f"{op.operation_id} will do this:\n")
    out.stderr.write(human(preview.operation_id, answer, out.now_ms))
    if not invocation.yes:
        if not interactive:
            raise Refused(
                f"{op.operation_id} needs confirmation: run it in a terminal, or pass --yes",
                op.operation_id,
            )
        if not await _ask(confirm, "Proceed?"):
            raise Refused("not confirmed; nothing was changed", op.operation_id)
    confirm_wires = _wires(op.input_type)
    extra = {k: v for k, v in answer.items() if k in confirm_wires and k not in params}
    result = await call(client, op.operation_id, {**params, **extra}, out)
    out.result(op.operation_id, result)
    return _exit.OK
