"""Consequential pairs as one command: `X.preview` + `X.confirm` → `maia X ...`.

A consequential op (`confirmation: required`) with a `.preview` sibling is also offered at
its stem: `maia routine create --name ... --cron ... --timezone ... --project-id ...
--prompt ...` previews, shows the summary, asks (or `--yes`), then confirms;
`--dry-run` prints only the preview (`--json` for programs) and changes nothing. The two
ops stay commands of their own (`maia routine create preview|confirm`) for scripts.

At the stem every field is an option (none positional: the stem group's own subcommands
are the only words after it), none is required on the command line (the Node names a
missing field), and a nested object of plain fields is spread into one option per field
(`schedule: {cron, timezone}` → `--cron`, `--timezone`; `--<object>-<field>` where two
objects share a field name).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterator, Mapping
from typing import Any, Final

import click

from maia.protocol import OperationDescriptor, Registry
from maia.protocol.shapes import Bool, Enum, FieldPlan, Int, Nullable, Obj, Shape, Str, class_plan

from ._flags import REFERENCE_FORMS, _option, input_plan, reference_kind, wire_params

SEP: Final = "__"  # click destination of a spread field: <object>__<field>
_PLAIN = (Str, Int, Bool, Enum)


def _inner(shape: Shape) -> Shape:
    return shape.inner if isinstance(shape, Nullable) else shape


def pairs(
    registry: Registry, within: Callable[[tuple[str, ...]], bool] = lambda _stem: True
) -> Iterator[tuple[tuple[str, ...], OperationDescriptor]]:
    """(stem path, confirm op) of every consequential op that has a preview sibling, among
    the stems `within` takes (by ID first: the registry loads only the ops it must)."""
    for operation_id in registry.ids():
        stem, _, last = operation_id.rpartition(".")
        if last != "confirm" or f"{stem}.preview" not in registry:
            continue
        if not within(tuple(stem.split("."))):
            continue
        op = registry.get(operation_id)
        if op is not None and op.confirmation == "required":
            yield tuple(stem.split(".")), op


def _spread(plan: FieldPlan) -> tuple[FieldPlan, ...] | None:
    """The fields of a nested object of plain fields, or None when it is not one."""
    shape = _inner(plan.shape)
    if not isinstance(shape, Obj):
        return None
    inner = class_plan(shape.cls)
    if not all(isinstance(_inner(p.shape), _PLAIN) for p in inner):
        return None
    return inner


def _filled(op: OperationDescriptor) -> frozenset[str]:
    """The confirm's fields its preview does not take: the stem fills them from the preview's
    answer (digest, proof, preview ID), so its help does not offer them (`X confirm` does)."""
    from maia.protocol import REGISTRY

    preview = REGISTRY.get(op.operation_id.rpartition(".")[0] + ".preview")
    if preview is None:
        return frozenset()
    own = {p.name for p in input_plan(preview)} | {"command_id"}  # the key stays the user's
    return frozenset(p.name for p in input_plan(op)) - own


def pair_params(op: OperationDescriptor) -> list[click.Parameter]:
    """The stem command's options: every field optional, nested plain objects spread, the
    fields the preview supplies hidden (still accepted: a script's own digest and proof)."""
    plans = input_plan(op)
    filled = _filled(op)
    spread = {p.name: _spread(p) for p in plans}
    names = Counter(
        [p.name for p in plans if spread[p.name] is None]
        + [i.name for inner in spread.values() if inner for i in inner]
    )
    params: list[click.Parameter] = []
    for plan in plans:
        inner = spread[plan.name]
        if inner is None:
            option = _option(op, plan)
            option.required = False
            if isinstance(option, click.Option) and plan.name in filled:
                option.hidden = True
            params.append(option)
            continue
        for field in inner:
            flag = field.name if names[field.name] == 1 else f"{plan.name}_{field.name}"
            option = _option(op, field)
            option.required = False
            kind = reference_kind(op, field)
            option.help = field.spec.doc + (f" ({REFERENCE_FORMS[kind]})" if kind else "")
            option.metavar = field.name.upper()
            option.opts = ["--" + flag.replace("_", "-")]
            option.name = f"{plan.name}{SEP}{field.name}"
            params.append(option)
    params.append(
        click.Option(["--dry-run", "dry_run"], is_flag=True,
                     help="Print only the preview; change nothing.")
    )  # fmt: skip
    return params


def pair_wire(op: OperationDescriptor, values: Mapping[str, Any]) -> dict[str, Any]:
    """The confirm's wire input from the stem's option values (spread objects regrouped)."""
    flat = {k: v for k, v in values.items() if SEP not in k}
    wire = wire_params(op, flat)
    for plan in input_plan(op):
        inner = _spread(plan)
        if inner is None:
            continue
        body = {f.wire: values[f"{plan.name}{SEP}{f.name}"] for f in inner
                if values.get(f"{plan.name}{SEP}{f.name}") not in (None, ())}  # fmt: skip
        if body:
            wire[plan.wire] = body
    return wire


def pair_references(op: OperationDescriptor, wire: Mapping[str, Any]) -> dict[str, str]:
    """`object.field` → reference kind of each spread field in `wire` that takes a human
    reference (`template.projectId` → project), so `--project-id app` resolves at the stem
    as it does at `session create`."""
    out: dict[str, str] = {}
    for plan in input_plan(op):
        body = wire.get(plan.wire)
        inner = _spread(plan)
        if inner is None or not isinstance(body, dict):
            continue
        for field in inner:
            kind = reference_kind(op, field)
            if kind is not None and field.wire in body:
                out[f"{plan.wire}.{field.wire}"] = kind
    return out
