"""Command-line parameters derived from an op's input schema, and their values back to wire form.

Each input field becomes one click parameter (kebab-case of its Python name): strings and
integers take a value, booleans are `--x/--no-x`, enums are choices, lists are repeatable
(a plural field also answers to its singular: `--state` for `states`), maps take KEY=VALUE
(repeatable), and nested objects take one JSON value. Required string fields are positional,
in declaration order, so `maia turn send REF "text"` reads naturally. Fields that name a
Session, turn or Project take a human reference (ID, ID prefix, title or name) that `execute`
resolves through `reference.resolve`; the idempotency key `commandId` is never positional and
is generated when absent (only where it is an idempotency key: `receipt.get` looks one up).
A field in `FROM_FILE` is positional but optional: `--file PATH` (or `-`) may give it instead.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Final, Literal

import attrs
import click

from maia.protocol import OperationDescriptor
from maia.protocol.shapes import (
    Bool,
    Enum,
    FieldPlan,
    Int,
    ListOf,
    MapOf,
    Nullable,
    Shape,
    Str,
    class_plan,
)

ReferenceKind = Literal["session", "project", "turn", "routine", "webhook", "approval"]
# Input fields that hold an exact ID the CLI lets a person name by reference.
REFERENCE_FIELDS: Final[dict[str, ReferenceKind]] = {
    "session_id": "session",
    "turn_id": "turn",
    "project_id": "project",
    "routine_id": "routine",
    "webhook_id": "webhook",
    "approval_id": "approval",
}
REFERENCE_FORMS: Final[dict[str, str]] = {
    "session": "Session ID, ID prefix or title",
    "project": "Project ID, ID prefix or key",
    "turn": "turn ID or ID prefix",
    "routine": "routine ID, ID prefix or name",
    "webhook": "webhook ID or ID prefix",
    "approval": "approval ID or ID prefix",
}
# Ops whose reference field is not what the command is about, so it stays an option:
# `session create` takes `--project` (default: the current directory's Project).
OPTION_ONLY: Final[dict[str, frozenset[str]]] = {
    "session.create": frozenset({"project_id"}),
    "reference.resolve": frozenset({"project_id"}),
}
# Ops whose reference field may be left out: the CLI supplies it (see `_execute`).
DEFAULTED: Final[dict[str, frozenset[str]]] = {
    "session.create": frozenset({"project_id"}),  # the current directory's Project
    "events.read": frozenset({"position"}),  # from the start, or --after CURSOR
}
COMMAND_ID: Final = "command_id"
# Op -> its wire text field that `--file PATH` may supply instead (a 1 MB prompt can't be an
# argument); read by `execute`, not the parser (which does no I/O).
FROM_FILE: Final[dict[str, str]] = {"turn.send": "text"}


def _kebab(name: str) -> str:
    return name.replace("_", "-")


def _singular(name: str) -> str | None:
    if name.endswith("ies"):
        return name[:-3] + "y"
    if name.endswith("s") and not name.endswith("ss"):
        return name[:-1]
    return None


def _inner(shape: Shape) -> Shape:
    return shape.inner if isinstance(shape, Nullable) else shape


def input_plan(op: OperationDescriptor) -> tuple[FieldPlan, ...]:
    """The op's input fields as the wire sees them (empty for an op without input fields)."""
    if op.input_type is None or not attrs.has(op.input_type):
        return ()
    return class_plan(op.input_type)


def positional_fields(op: OperationDescriptor) -> tuple[FieldPlan, ...]:
    """Required string fields (not the command ID, not option-only), in declaration order."""
    skip = OPTION_ONLY.get(op.operation_id, frozenset()) | {COMMAND_ID}
    return tuple(
        plan
        for plan in input_plan(op)
        if plan.required and isinstance(plan.shape, Str) and plan.name not in skip
    )


def reference_kind(op: OperationDescriptor, plan: FieldPlan) -> ReferenceKind | None:
    """The reference kind a field takes, or None when it takes its exact value."""
    if op.operation_id == "reference.resolve" and plan.name == "reference":
        return None
    return REFERENCE_FIELDS.get(plan.name)


def _metavar(plan: FieldPlan, kind: ReferenceKind | None) -> str:
    return kind.upper() if kind else plan.name.upper()


def _option(op: OperationDescriptor, plan: FieldPlan) -> click.Parameter:
    shape = _inner(plan.shape)
    flag = "--" + _kebab(plan.name)
    doc = plan.spec.doc
    kind = reference_kind(op, plan)
    if kind:
        doc += f" ({REFERENCE_FORMS[kind]})"
    if isinstance(shape, Bool):
        return click.Option([f"{flag}/--no-{_kebab(plan.name)}", plan.name], default=None, help=doc)
    if isinstance(shape, ListOf):
        names = [flag]
        singular = _singular(plan.name)
        if singular:
            names.insert(0, "--" + _kebab(singular))
        return click.Option(
            [*names, plan.name], multiple=True, type=_scalar_type(shape.item), help=doc
        )
    if isinstance(shape, MapOf):
        return click.Option([flag, plan.name], multiple=True, metavar="KEY=VALUE", help=doc)
    required_here = (
        plan.required
        # the CLI makes the idempotency key itself only where the op requires one; a
        # preview's key is the one its confirm will repeat: the caller's to give
        and not (plan.name == COMMAND_ID and op.idempotency == "required")
        and plan.name not in DEFAULTED.get(op.operation_id, frozenset())
    )
    return click.Option(
        [flag, plan.name],
        type=_scalar_type(shape),
        shell_complete=_session_completion() if kind == "session" else None,
        required=required_here,
        metavar=_metavar(plan, kind) if isinstance(shape, Str) else None,
        help=doc + (" JSON." if not isinstance(shape, Str | Int | Enum) else ""),
    )


def _session_completion() -> Any:
    return _complete_session


def _complete_session(ctx: click.Context, param: click.Parameter, incomplete: str) -> Any:
    """Loads the completion module (click's shell completion) only when a shell asks."""
    from ._completion import complete_session

    return complete_session(ctx, param, incomplete)


def _scalar_type(shape: Shape) -> click.ParamType[Any]:
    shape = _inner(shape)
    if isinstance(shape, Int):
        return click.INT
    if isinstance(shape, Enum):
        return click.Choice(shape.values)
    return click.STRING


def op_params(op: OperationDescriptor) -> list[click.Parameter]:
    """The click parameters of the op's input fields (positionals first)."""
    positional = positional_fields(op)
    params: list[click.Parameter] = []
    for plan in positional:
        required = FROM_FILE.get(op.operation_id) != plan.wire
        metavar = _metavar(plan, reference_kind(op, plan))
        params.append(
            click.Argument(
                [plan.name],
                metavar=metavar if required else f"[{metavar}]",
                shell_complete=_complete_session if reference_kind(op, plan) == "session" else None,
                required=required,
            )
        )
    names = {plan.name for plan in positional}
    params += [_option(op, plan) for plan in input_plan(op) if plan.name not in names]
    return params


def _json_value(plan: FieldPlan, text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        raise click.BadParameter(
            "expects a JSON value", param_hint="--" + _kebab(plan.name)
        ) from None


def _map_value(plan: FieldPlan, pairs: tuple[str, ...]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    shape = _inner(plan.shape)
    value_shape = shape.value if isinstance(shape, MapOf) else None
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise click.BadParameter("expects KEY=VALUE", param_hint="--" + _kebab(plan.name))
        out[key] = int(value) if isinstance(value_shape, Int) and value.isdigit() else value
    return out


def wire_params(op: OperationDescriptor, values: Mapping[str, Any]) -> dict[str, Any]:
    """The op's input in wire form (camelCase) from click's values; unset values are left out.

    Raises click.BadParameter for a JSON or KEY=VALUE value that does not parse.
    """
    wire: dict[str, Any] = {}
    for plan in input_plan(op):
        value = values.get(plan.name)
        if value is None or value == ():
            continue
        shape = _inner(plan.shape)
        if isinstance(shape, MapOf):
            wire[plan.wire] = _map_value(plan, value)
        elif isinstance(shape, ListOf):
            wire[plan.wire] = list(value)
        elif isinstance(shape, Str | Int | Bool | Enum):
            wire[plan.wire] = value
        else:
            wire[plan.wire] = _json_value(plan, value)
    return wire


def reference_fields(op: OperationDescriptor) -> dict[str, ReferenceKind]:
    """Wire name → kind of every input field that takes a human reference."""
    out: dict[str, ReferenceKind] = {}
    for plan in input_plan(op):
        kind = reference_kind(op, plan)
        if kind is not None:
            out[plan.wire] = kind
    return out


def takes_command_id(op: OperationDescriptor) -> bool:
    return any(plan.name == COMMAND_ID for plan in input_plan(op))
