"""The operation registry: one frozen `OperationDescriptor` per op, checked when built.

The descriptor carries every field of the spec's OperationDescriptorV1 plus what Maia needs
beside it: the input and output schema classes, the typed error codes, the caller roles,
the model/voice exposure policy and the Agent exposure class (`agent_exposure`, which every
op must state: `AGENT_EXPOSURE_RULE` says how it is chosen). `build_registry` refuses the
combinations the spec refuses (see `_refusals`), so a bad op fails at import (its group
loads checked), not at the first call. The registry digest covers the descriptors, their
schemas, the capabilities, the error table and the deprecation aliases (`_versioning`).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterable, Iterator
from typing import Any, Final, Literal

import attrs

from maia.core._digests import digest_json
from maia.core._errors import ERROR_CODES
from maia.core._shapes import class_plan

from ._capabilities import NODE_CAPABILITIES
from ._versioning import Deprecation, deprecation_problems

PROTOCOL_VERSION: Final = "maia.protocol/v1alpha1"
SCHEMA_BASE: Final = "urn:maia:schema:maia.protocol:v1alpha1"
ERROR_SCHEMA_REF: Final = f"{SCHEMA_BASE}:error"
CALLER_ROLES: Final = frozenset({"local-user", "session", "machine"})
# Errors any op may answer (entry check, authority, the request deadline, the Node's health,
# a connection or mailbox past its bound).
COMMON_ERRORS: Final = (
    "invalid_request",
    "validation_failed",
    "unauthenticated",
    "role_denied",
    "deadline_exceeded",
    "unavailable",
    "internal_error",
    "command_not_implemented",
    "overloaded",
)

Stability = Literal["alpha", "beta", "stable", "deprecated"]
Owner = Literal["protocol", "node", "swarm", "provider"]
Surface = Literal["cli", "tui", "sdk", "model", "voice", "a2a"]
Risk = Literal["read", "reversible", "consequential", "destructive"]
Idempotency = Literal["none", "optional", "required"]
Confirmation = Literal["none", "required"]
EffectClass = Literal["none", "native-idempotent", "native-reconcilable", "external-uncertain"]
StreamMode = Literal["snapshot", "events", "snapshot-then-events"]
AgentExposure = Literal["eligible", "human-only", "unsupported"]
AGENT_EXPOSURES: Final = ("eligible", "human-only", "unsupported")
AGENT_EXPOSURE_RULE: Final = (
    "human-only: an op that confirms a preview (consequential or destructive), answers an "
    "approval, or widens what the Node trusts or reaches (a new Project root); "
    "unsupported: the connection handshake and the streams (a tool call cannot hold a "
    "stream); eligible: every other read, preview and reversible mutation of the Node's "
    "own records."
)


@attrs.frozen
class StreamDescriptor:
    """How a streaming op delivers: its mode and the schemas of its cursor and reset."""

    mode: StreamMode
    cursor_schema_ref: str
    reset_schema_ref: str


@attrs.frozen
class ExposurePolicy:
    """The explicit policy a model- or voice-exposed op needs (spec: Operation registry)."""

    policy_ref: str
    may_preview: bool = True
    may_confirm: bool = False  # speech and model tools never issue or consume a confirmation


def _schema_ref(which: str) -> Any:
    return attrs.Factory(
        lambda self: f"{SCHEMA_BASE}:operation:{self.operation_id}:{which}", takes_self=True
    )


@attrs.frozen(kw_only=True)
class OperationDescriptor:
    """One operation: OperationDescriptorV1's fields, its schema classes, errors and callers."""

    operation_id: str
    summary: str
    input_type: type | None
    output_type: type | None
    since: str = "0.1.0"
    stability: Stability = "alpha"
    replacement_operation_id: str | None = None
    owner: Owner = "node"
    availability: tuple[Surface, ...] = ("cli", "tui", "sdk")
    input_schema_ref: str = _schema_ref("input")
    output_schema_ref: str = _schema_ref("output")
    error_schema_ref: str = ERROR_SCHEMA_REF
    risk: Risk = "read"
    authorization_scope: str = "node.local"
    revision_fields: tuple[str, ...] = ()
    idempotency: Idempotency = "none"
    confirmation: Confirmation = "none"
    effect_class: EffectClass = "none"
    event_types: tuple[str, ...] = ()
    receipt: bool = False
    stream: StreamDescriptor | None = None
    redaction_policy_ref: str = "redaction:default"
    errors: tuple[str, ...] = ()
    callers: frozenset[str] = frozenset({"local-user"})
    exposure: ExposurePolicy | None = None
    agent_exposure: AgentExposure | None = None  # required: the build refuses None

    @property
    def is_mutation(self) -> bool:
        return self.risk != "read"

    def projection(self) -> dict[str, Any]:
        """The descriptor's JSON projection (the spec's field names), without schemas."""
        out: dict[str, Any] = {
            "operationId": self.operation_id,
            "since": self.since,
            "stability": self.stability,
            "owner": self.owner,
            "availability": list(self.availability),
            "inputSchemaRef": self.input_schema_ref,
            "outputSchemaRef": self.output_schema_ref,
            "errorSchemaRef": self.error_schema_ref,
            "risk": self.risk,
            "authorizationScope": self.authorization_scope,
            "revisionFields": list(self.revision_fields),
            "idempotency": self.idempotency,
            "confirmation": self.confirmation,
            "effectClass": self.effect_class,
            "eventTypes": list(self.event_types),
            "receipt": self.receipt,
            "redactionPolicyRef": self.redaction_policy_ref,
            "errors": list(self.errors),
            "callers": sorted(self.callers),
            "agentExposure": self.agent_exposure,
        }
        if self.replacement_operation_id is not None:
            out["replacementOperationId"] = self.replacement_operation_id
        if self.stream is not None:
            out["stream"] = {
                "mode": self.stream.mode,
                "cursorSchemaRef": self.stream.cursor_schema_ref,
                "resetSchemaRef": self.stream.reset_schema_ref,
            }
        if self.exposure is not None:
            out["exposure"] = {
                "policyRef": self.exposure.policy_ref,
                "mayPreview": self.exposure.may_preview,
                "mayConfirm": self.exposure.may_confirm,
            }
        return out


class RegistryError(ValueError):
    """A registry the spec refuses (raised at build time: our bug, never a client's)."""


def _refusals(op: OperationDescriptor) -> Iterator[str]:
    name = op.operation_id
    if op.input_type is None or op.output_type is None:
        yield f"{name}: missing input or output schema"
    else:
        for cls in (op.input_type, op.output_type):
            try:
                class_plan(cls)
            except TypeError as error:
                yield f"{name}: schema {cls!r} is unusable: {error}"
    if op.is_mutation and not op.receipt:
        yield f"{name}: a mutation must record a receipt"
    if op.risk in ("consequential", "destructive") and (
        op.idempotency != "required" or op.confirmation != "required"
    ):
        yield f"{name}: a {op.risk} operation needs required idempotency and confirmation"
    if op.idempotency == "required" and op.input_type is not None:
        wires = {p.wire for p in class_plan(op.input_type)} if attrs.has(op.input_type) else set()
        if "commandId" not in wires:
            yield f"{name}: required idempotency needs a commandId input field"
    if {"model", "voice"} & set(op.availability) and op.exposure is None:
        yield f"{name}: model or voice exposure needs an explicit exposure policy"
    if op.exposure is not None and op.exposure.may_confirm:
        yield f"{name}: model and voice tools never confirm"
    unknown = [code for code in op.errors if code not in ERROR_CODES]
    if unknown:
        yield f"{name}: unknown error codes {', '.join(unknown)}"
    if not op.callers or not op.callers <= CALLER_ROLES:
        yield f"{name}: callers must be a non-empty subset of {sorted(CALLER_ROLES)}"
    if op.replacement_operation_id is not None and op.stability != "deprecated":
        yield f"{name}: only a deprecated operation names a replacement"
    yield from _exposure_refusals(op)


def _exposure_refusals(op: OperationDescriptor) -> Iterator[str]:
    name = op.operation_id
    if op.agent_exposure not in AGENT_EXPOSURES:
        yield (
            f"{name}: not classified for agent exposure (set agent_exposure to "
            f"{', '.join(AGENT_EXPOSURES)})"
        )
        return
    if op.agent_exposure == "eligible" and op.confirmation == "required":
        yield f"{name}: an op that takes a confirmation is never agent-eligible"
    if op.agent_exposure == "eligible" and op.stream is not None:
        yield f"{name}: a streaming op is never agent-eligible (a tool call holds no stream)"
    if {"model", "voice"} & set(op.availability) and op.agent_exposure != "eligible":
        yield f"{name}: only an agent-eligible op is offered to model or voice"


class Registry:
    """The built, checked, immutable set of operations (iterate it for descriptors).

    Built from its operations (`build_registry`), or lazily from groups (`lazy_registry`):
    then `get` imports only the module of the op asked for, through a generated index, and
    iterating imports every group, so a short command pays only for the ops it uses."""

    def __init__(
        self,
        operations: tuple[OperationDescriptor, ...],
        digest: str | None = None,
        groups: _Groups | None = None,
        deprecations: tuple[Deprecation, ...] = (),
        registry_version: str = "0.0.0",
    ) -> None:
        self._operations = operations
        self._by_id = {op.operation_id: op for op in operations}
        self._pinned = digest
        self._computed: str | None = None
        self._groups = groups
        self.deprecations = deprecations
        self.registry_version = registry_version
        self._aliases = {d.name: d for d in deprecations if d.kind == "operation"}

    @property
    def digest(self) -> str:
        """The registry digest: the pinned (generated) one if given, else `computed_digest`.

        Maia's own registry pins the constant `maia contract generate` writes, so a hello
        never pays for building every schema; `maia contract check` refuses a stale one."""
        return self._pinned if self._pinned is not None else self.computed_digest

    @property
    def computed_digest(self) -> str:
        """sha256 over the canonical projection (computed on first use: it builds every schema)."""
        if self._computed is None:
            self._computed = digest_json(registry_projection(self._all(), self.deprecations))
        return self._computed

    def _all(self) -> tuple[OperationDescriptor, ...]:
        if self._groups is not None:
            whole = build_registry(  # checks across groups too
                self._groups.load_all(),
                deprecations=self.deprecations,
                registry_version=self.registry_version,
            )
            self._operations, self._by_id = whole._operations, whole._by_id
            self._groups = None
        return self._operations

    def deprecation(self, name: str) -> Deprecation | None:
        """The deprecation of an operation name (a deprecated op, or a renamed op's alias)."""
        return self._aliases.get(name)

    def resolve(self, name: str) -> tuple[OperationDescriptor | None, Deprecation | None]:
        """The op a method name reaches and, when the name is deprecated, its deprecation:
        a registered op (deprecated or not), or the replacement a renamed op's alias names."""
        alias = self._aliases.get(name)
        found = self.get(name)
        if found is None and alias is not None and alias.replacement is not None:
            found = self.get(alias.replacement)
        return found, alias

    def get(self, operation_id: str) -> OperationDescriptor | None:
        found = self._by_id.get(operation_id)
        if found is None and self._groups is not None:
            found = self._groups.find(operation_id)
            if found is None:  # not indexed (a stale index): look everywhere
                self._all()
                return self._by_id.get(operation_id)
            self._by_id[operation_id] = found
        return found

    def __iter__(self) -> Iterator[OperationDescriptor]:
        return iter(self._all())

    def __len__(self) -> int:
        return len(self._all())

    def __contains__(self, operation_id: object) -> bool:
        # A lazy registry trusts its index here (a test and `maia contract check` keep it
        # fresh), so asking about a local command (`node start`) loads nothing.
        if self._groups is not None:
            return operation_id in self._groups.index
        return operation_id in self._by_id

    def ids(self) -> tuple[str, ...]:
        """Every op ID, sorted (a lazy registry answers from its index, loading nothing)."""
        if self._groups is not None:
            return tuple(sorted(self._groups.index))
        return tuple(op.operation_id for op in self._operations)


class _Groups:
    """Where a lazy registry's ops live: groups `"module:NAME"` (a tuple of descriptors each)
    and the generated index op ID -> group. A group is checked when it loads."""

    def __init__(self, groups: tuple[str, ...], index: dict[str, str]) -> None:
        self.groups = groups
        self.index = {op_id: group for op_id, group in index.items() if group in groups}
        self._loaded: dict[str, dict[str, OperationDescriptor]] = {}

    def _load(self, group: str) -> dict[str, OperationDescriptor]:
        ops = self._loaded.get(group)
        if ops is None:
            module, _, name = group.partition(":")
            checked = build_registry(getattr(importlib.import_module(module), name), group=True)
            ops = self._loaded[group] = {op.operation_id: op for op in checked}
        return ops

    def find(self, operation_id: str) -> OperationDescriptor | None:
        group = self.index.get(operation_id)
        return None if group is None else self._load(group).get(operation_id)

    def load_all(self) -> tuple[OperationDescriptor, ...]:
        return tuple(op for group in self.groups for op in self._load(group).values())


def lazy_registry(
    groups: tuple[str, ...],
    index: dict[str, str],
    *,
    digest: str,
    deprecations: tuple[Deprecation, ...] = (),
    registry_version: str = "0.0.0",
) -> Registry:
    """A registry that imports each group of ops on first use (see `Registry`).

    `index` (op ID -> group) only speeds look-ups up: an ID it lacks is looked for in every
    group, so a stale index costs time, never an op. Iterating builds (and checks) the whole
    registry as `build_registry` does."""
    return Registry((), digest, _Groups(groups, index), deprecations, registry_version)


def registry_projection(
    operations: Iterable[OperationDescriptor], deprecations: Iterable[Deprecation] = ()
) -> dict[str, Any]:
    """The canonical projection the registry digest covers: descriptors and their schemas,
    the capabilities, the error table (code, status, retryable), the errors every op may
    answer, and the deprecation aliases."""
    from ._documents import operation_schema  # documents import this module

    return {
        "protocolVersion": PROTOCOL_VERSION,
        "capabilities": [{"name": name, "meaning": text} for name, text in NODE_CAPABILITIES],
        "errors": [
            {"code": e.code, "status": e.status, "retryable": e.retryable}
            for e in sorted(ERROR_CODES.values(), key=lambda e: e.code)
        ],
        "commonErrors": sorted(COMMON_ERRORS),
        "deprecations": sorted(
            (d.projection() for d in deprecations), key=lambda d: (d["kind"], d["name"])
        ),
        "operations": [
            {
                **op.projection(),
                "inputSchema": operation_schema(op, "input"),
                "outputSchema": operation_schema(op, "result"),
            }
            for op in sorted(operations, key=lambda op: op.operation_id)
        ],
    }


def build_registry(
    operations: Iterable[OperationDescriptor],
    *,
    digest: str | None = None,
    deprecations: tuple[Deprecation, ...] = (),
    registry_version: str = "0.0.0",
    group: bool = False,
) -> Registry:
    """Check every op and build the registry (`digest`: a generated digest to pin; `group`:
    these are one group of a lazy registry, so the table-wide deprecation rules wait for the
    whole registry).

    Raises RegistryError listing every refusal: duplicate IDs, missing or unusable schemas,
    a mutation without a receipt, a consequential op without required idempotency and
    confirmation, model/voice exposure without a policy, unknown error codes, bad callers,
    an op not classified for agent exposure, a deprecation table the policy refuses.
    """
    ops = tuple(sorted(operations, key=lambda op: op.operation_id))
    problems: list[str] = []
    seen: set[str] = set()
    for op in ops:
        if op.operation_id in seen:
            problems.append(f"{op.operation_id}: duplicate operation ID")
        seen.add(op.operation_id)
        problems.extend(_refusals(op))
    if not group:
        problems.extend(_deprecated_refusals(ops, deprecations, registry_version))
    if problems:
        raise RegistryError("; ".join(problems))
    return Registry(ops, digest, None, deprecations, registry_version)


def _deprecated_refusals(
    ops: tuple[OperationDescriptor, ...], deprecations: tuple[Deprecation, ...], version: str
) -> Iterator[str]:
    """The table's own rules, and its agreement with the ops' `stability`."""
    yield from deprecation_problems(deprecations, seen_ids(ops), registry_version=version)
    listed = {d.name: d for d in deprecations if d.kind == "operation"}
    for op in ops:
        entry = listed.get(op.operation_id)
        if op.stability == "deprecated" and entry is None:
            yield f"{op.operation_id}: a deprecated op needs its deprecation (removeAfter)"
        if entry is not None and op.stability != "deprecated":
            yield f"{op.operation_id}: listed as deprecated but its stability is {op.stability}"
        if entry is not None and entry.replacement != op.replacement_operation_id:
            yield f"{op.operation_id}: its deprecation and replacementOperationId disagree"


def seen_ids(ops: Iterable[OperationDescriptor]) -> frozenset[str]:
    return frozenset(op.operation_id for op in ops)
