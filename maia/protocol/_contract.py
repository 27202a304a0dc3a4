"""Generated projections of the registry: the op reference in `docs/protocol.md` and the
registry lock file `docs/registry.lock.json`, and the check that compares them.

Pure: callers read and write the files (`maia contract generate|check`). The lock records a
digest per op and the deprecation aliases; what the version policy refuses against it (an
op added, removed or altered without the bump `_versioning.policy_problems` asks, an alias
removed early or kept past its `removeAfter`) is refused by `check` and by `generate` alike,
so regenerating cannot launder a breaking change.
"""

from __future__ import annotations

import datetime
import json
from collections.abc import Iterable
from typing import Any, Final

from maia.core._digests import digest_json
from maia.core._errors import ERROR_CODES
from maia.core._shapes import ListOf, MapOf, Nullable, Obj, Shape, Tagged, class_plan

from ._capabilities import NODE_CAPABILITIES
from ._documents import operation_schema
from ._jsonschema import class_doc, limits_text, type_text
from ._registry import (
    AGENT_EXPOSURE_RULE,
    COMMON_ERRORS,
    PROTOCOL_VERSION,
    OperationDescriptor,
    Registry,
)
from ._versioning import policy_problems

BEGIN_MARKER: Final = "<!-- BEGIN GENERATED: maia contract generate -->"
END_MARKER: Final = "<!-- END GENERATED -->"


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _classes_in(shape: Shape) -> Iterable[type]:
    match shape:
        case Obj(cls=cls):
            yield cls
        case Tagged(members=members):
            for _, cls in members:
                yield cls
        case ListOf(item=inner) | MapOf(value=inner) | Nullable(inner=inner):
            yield from _classes_in(inner)
        case _:
            pass


def _field_table(cls: type) -> list[str]:
    lines = ["| field | type | required | limits | description |", "|---|---|---|---|---|"]
    for plan in class_plan(cls):
        limits = limits_text(plan.shape)
        if plan.spec.message:
            limits = f"{limits}; refusal: “{plan.spec.message}”".lstrip("; ")
        lines.append(
            f"| `{plan.wire}` | {type_text(plan.shape)} | {'yes' if plan.required else 'no'} "
            f"| {_cell(limits)} | {_cell(plan.spec.doc)} |"
        )
    if len(lines) == 2:
        return ["(no fields)"]
    return lines


def _op_section(op: OperationDescriptor) -> list[str]:
    assert op.input_type is not None  # the registry refuses None
    assert op.output_type is not None
    specific = [code for code in op.errors if code not in COMMON_ERRORS]
    facts = [
        f"risk `{op.risk}`",
        f"idempotency `{op.idempotency}`",
        f"confirmation `{op.confirmation}`",
        f"receipt {'yes' if op.receipt else 'no'}",
        f"effect `{op.effect_class}`",
        f"callers {', '.join(f'`{c}`' for c in sorted(op.callers))}",
        f"agents `{op.agent_exposure}`",
        f"surfaces {', '.join(op.availability)}",
        f"since {op.since} ({op.stability})",
    ]
    if op.revision_fields:
        facts.append(f"revision fields {', '.join(f'`{f}`' for f in op.revision_fields)}")
    if op.event_types:
        facts.append(f"events {', '.join(f'`{e}`' for e in op.event_types)}")
    if op.stream is not None:
        facts.append(f"stream `{op.stream.mode}`")
    return [
        f"### `{op.operation_id}`",
        "",
        op.summary,
        "",
        "; ".join(facts) + ".",
        "",
        "Errors: "
        + (", ".join(f"`{c}`" for c in specific) if specific else "only the common ones")
        + ".",
        "",
        f"Input ([{op.input_type.__name__}](#{op.input_type.__name__.lower()})):",
        "",
        *_field_table(op.input_type),
        "",
        f"Result ([{op.output_type.__name__}](#{op.output_type.__name__.lower()})):",
        "",
        *_field_table(op.output_type),
        "",
    ]


def render_reference(registry: Registry) -> str:
    """The generated block of `docs/protocol.md` (markers included)."""
    lines = [
        BEGIN_MARKER,
        "",
        f"Protocol `{PROTOCOL_VERSION}`, registry digest `{registry.computed_digest}`.",
        "",
        "### Capabilities",
        "",
        "| capability | meaning |",
        "|---|---|",
        *(f"| `{name}` | {_cell(text)} |" for name, text in NODE_CAPABILITIES),
        "",
        "### Error codes",
        "",
        "| code | status | retryable | message shape |",
        "|---|---|---|---|",
        *(
            f"| `{e.code}` | {e.status} | {'yes' if e.retryable else 'no'} | {_cell(e.summary)} |"
            for e in ERROR_CODES.values()
        ),
        "",
        "Every operation may also answer the common errors: "
        + ", ".join(f"`{c}`" for c in COMMON_ERRORS)
        + ".",
        "",
        "### Deprecations",
        "",
        *_deprecation_lines(registry),
        "",
        "### Operations",
        "",
        f"Agent exposure: {AGENT_EXPOSURE_RULE}",
        "",
        "| operation | risk | receipt | agents | summary |",
        "|---|---|---|---|---|",
        *(
            f"| [`{op.operation_id}`](#{op.operation_id.replace('.', '')}) | {op.risk} "
            f"| {'yes' if op.receipt else 'no'} | {op.agent_exposure} | {_cell(op.summary)} |"
            for op in registry
        ),
        "",
    ]
    shared: dict[str, type] = {}
    for op in registry:
        lines.extend(_op_section(op))
        for cls in (op.input_type, op.output_type):
            assert cls is not None
            for plan in class_plan(cls):
                for inner in _classes_in(plan.shape):
                    _collect(inner, shared)
    lines += ["### Shapes", ""]
    for name, cls in sorted(shared.items()):
        lines += [f"#### {name}", "", class_doc(cls), "", *_field_table(cls), ""]
    lines.append(END_MARKER)
    return "\n".join(lines) + "\n"


def _deprecation_lines(registry: Registry) -> list[str]:
    if not registry.deprecations:
        return ["None: no operation, command, flag or config key is deprecated."]
    return [
        "| kind | name | replacement | deprecated in | on | remove after |",
        "|---|---|---|---|---|---|",
        *(
            f"| {d.kind} | `{d.name}` | {f'`{d.replacement}`' if d.replacement else '—'} "
            f"| {d.deprecated_in} | {d.deprecated_on} | {d.remove_after} |"
            for d in sorted(registry.deprecations, key=lambda d: (d.kind, d.name))
        ),
    ]


def _collect(cls: type, found: dict[str, type]) -> None:
    if cls.__name__ in found:
        return
    found[cls.__name__] = cls
    for plan in class_plan(cls):
        for inner in _classes_in(plan.shape):
            _collect(inner, found)


def splice_reference(document: str, block: str) -> str:
    """Put `block` between the markers of `document`. Raises ValueError without markers."""
    start = document.find(BEGIN_MARKER)
    end = document.find(END_MARKER)
    if start < 0 or end < start:
        raise ValueError(f"docs/protocol.md lacks the markers {BEGIN_MARKER} … {END_MARKER}")
    return document[:start] + block.rstrip("\n") + document[end + len(END_MARKER) :]


def lock_document(registry: Registry, registry_version: str) -> dict[str, Any]:
    """The registry snapshot: versions, digest, and a digest per op."""
    return {
        "protocolVersion": PROTOCOL_VERSION,
        "registryVersion": registry_version,
        "registryDigest": registry.computed_digest,
        "deprecations": sorted(
            (d.projection() for d in registry.deprecations), key=lambda d: (d["kind"], d["name"])
        ),
        "operations": {
            op.operation_id: {
                "since": op.since,
                "stability": op.stability,
                "digest": digest_json(
                    {
                        **op.projection(),
                        "inputSchema": operation_schema(op, "input"),
                        "outputSchema": operation_schema(op, "result"),
                    }
                ),
            }
            for op in registry
        },
    }


def render_lock(lock: dict[str, Any]) -> str:
    return json.dumps(lock, indent=2, sort_keys=True) + "\n"


def render_generated_module(registry: Registry, groups: Iterable[str]) -> str:
    """The text of `maia/protocol/_generated.py`: the registry digest, and which group
    (`"module:TUPLE"` of `groups`) holds each op, so the registry imports only what is used."""
    import importlib

    where: dict[str, str] = {}
    for group in groups:
        module, _, name = group.partition(":")
        for op in getattr(importlib.import_module(module), name):
            where[op.operation_id] = group
    index = "".join(f'    "{op_id}": "{where[op_id]}",\n' for op_id in sorted(where))
    return (
        '"""Generated by `maia contract generate` (do not edit): the registry digest and where\n'
        "each op lives. Pinned so that no process builds every schema to learn the digest, nor\n"
        'imports every op to find one; `maia contract check` refuses them once stale."""\n\n'
        "from typing import Final\n\n"
        f'REGISTRY_DIGEST: Final = "{registry.computed_digest}"\n\n'
        "OPERATION_INDEX: Final[dict[str, str]] = {\n"
        f"{index}"
        "}\n"
    )


def compatibility_problems(
    old: dict[str, Any], new: dict[str, Any], *, today: datetime.date | None = None
) -> list[str]:
    """What the version policy refuses in `new` against the committed lock `old` (`today`:
    the UTC date a `removeAfter` is compared with; the current one unless given)."""
    when = today or datetime.datetime.now(datetime.UTC).date()
    return policy_problems(old, new, today=when)
