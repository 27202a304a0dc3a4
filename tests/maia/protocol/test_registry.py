"""The operation registry: its refusal rules, the first slice's ops and their flags."""

from __future__ import annotations

import importlib
from typing import Any

import attrs
import pytest

from maia.protocol import (
    ERROR_CODES,
    INPUT_PREVIEW_MAX_BYTES,
    NODE_CAPABILITIES,
    PROTOCOL_VERSION,
    REGISTRY,
    REGISTRY_DIGEST,
    ExposurePolicy,
    MaiaError,
    OperationDescriptor,
    RegistryError,
    build_registry,
    decode_input,
    encode_output,
    field,
)

FIRST_SLICE = {
    "node.hello", "node.status", "session.create", "session.list", "session.show",
    "session.wait", "session.stop", "session.archive", "session.rename", "reference.resolve",
    "turn.send", "turn.wait", "turn.show", "turn.queue.list", "turn.cancel", "turn.interrupt",
    "receipt.get", "receipt.list", "events.read", "project.add", "project.list",
    "project.show", "session.attach",
}  # fmt: skip

SPEC_FIELDS = {
    "operationId", "since", "stability", "owner", "availability", "inputSchemaRef",
    "outputSchemaRef", "errorSchemaRef", "risk", "authorizationScope", "revisionFields",
    "idempotency", "confirmation", "effectClass", "eventTypes", "receipt", "redactionPolicyRef",
}  # fmt: skip


@attrs.frozen
class In:
    """Input with a commandId."""

    command_id: str = field()


@attrs.frozen
class Out:
    """Output."""

    ok: bool = field()


def _op(**kwargs: Any) -> OperationDescriptor:
    base: dict[str, Any] = {
        "operation_id": "thing.do",
        "summary": "Do a thing.",
        "input_type": In,
        "output_type": Out,
        "agent_exposure": "eligible",
    }
    return OperationDescriptor(**{**base, **kwargs})


def test_good_registry_builds() -> None:
    """The baseline op used by the refusal tests is itself accepted."""
    registry = build_registry([_op(), _op(operation_id="thing.other")])
    assert registry.get("thing.do") is not None
    assert len(registry) == 2
    assert registry.digest.startswith("sha256:")


@pytest.mark.parametrize(
    ("ops", "reason"),
    [
        ([_op(), _op()], "duplicate operation ID"),
        ([_op(input_type=None)], "missing input or output schema"),
        ([_op(output_type=None)], "missing input or output schema"),
        ([_op(input_type=dict)], "unusable"),
        ([_op(risk="reversible", idempotency="required")], "must record a receipt"),
        (
            [_op(risk="consequential", receipt=True, idempotency="required")],
            "needs required idempotency and confirmation",
        ),
        (
            [_op(risk="destructive", receipt=True, confirmation="required")],
            "needs required idempotency and confirmation",
        ),
        ([_op(availability=("cli", "model"))], "needs an explicit exposure policy"),
        ([_op(availability=("voice",))], "needs an explicit exposure policy"),
        (
            [_op(availability=("model",), exposure=ExposurePolicy("p", may_confirm=True))],
            "never confirm",
        ),
        ([_op(errors=("no_such_code",))], "unknown error codes no_such_code"),
        ([_op(callers=frozenset())], "callers"),
        ([_op(callers=frozenset({"root"}))], "callers"),
        ([_op(input_type=Out, idempotency="required")], "needs a commandId"),
        ([_op(replacement_operation_id="thing.new")], "only a deprecated"),
    ],
)
def test_refusals(ops: list[OperationDescriptor], reason: str) -> None:
    """Each combination the spec refuses fails the build, naming the op and the rule."""
    with pytest.raises(RegistryError, match=reason):
        build_registry(ops)


def test_consequential_with_policy_is_accepted() -> None:
    """A consequential op with receipt, required idempotency and confirmation is fine."""
    op = _op(
        risk="consequential",
        receipt=True,
        idempotency="required",
        confirmation="required",
        agent_exposure="human-only",
    )
    assert build_registry([op]).get("thing.do") is op


def test_first_slice_is_registered() -> None:
    """Every op the first slice names (and project.*, session.attach) is registered."""
    assert {op.operation_id for op in REGISTRY} >= FIRST_SLICE
    assert REGISTRY.get("nope.nope") is None


def test_projection_carries_every_spec_field() -> None:
    """Each descriptor projects every OperationDescriptorV1 field."""
    for op in REGISTRY:
        assert set(op.projection()) >= SPEC_FIELDS
        assert op.input_schema_ref.endswith(f"{op.operation_id}:input")


def test_mutation_flags_are_consistent() -> None:
    """Mutations: receipt, required idempotency with commandId, delivery and receiptId out."""
    mutations = {op.operation_id for op in REGISTRY if op.is_mutation}
    assert mutations == {
        "session.create", "session.stop", "session.archive", "session.rename", "turn.send",
        "turn.cancel", "turn.interrupt", "project.add", "config.admit.confirm",
        "project.relocate.confirm",
        "webhooks.change.confirm",
    } | {
        "routine.create.confirm", "routine.pause", "routine.resume", "routine.disable.confirm",
        "routine.run.confirm",
    } | {"approval.respond"} | {"machine.enroll.confirm", "machine.revoke.confirm"}  # fmt: skip
    for op in REGISTRY:
        assert op.output_type is not None
        outputs = {a.name for a in attrs.fields(op.output_type)}
        assert set(op.errors) <= set(ERROR_CODES)
        if op.is_mutation:
            assert op.receipt
            assert op.idempotency == "required"
            assert {"delivery", "receipt_id"} <= outputs
            if op.operation_id.startswith("routine.") and op.confirmation == "required":
                # spec (Scheduled Session operations): a replay with other values of a
                # routine confirm fails with storage_conflict
                assert "storage_conflict" in op.errors
            else:
                assert "idempotency_conflict" in op.errors
        else:
            assert not op.receipt
            assert op.idempotency == "none"


def test_spec_error_codes_and_limits() -> None:
    """The queue's typed errors and limits match the spec's Turn queue section."""
    send, cancel = REGISTRY.get("turn.send"), REGISTRY.get("turn.cancel")
    assert send is not None
    assert cancel is not None
    assert "turn_queue_full" in send.errors
    assert "turn_not_queued" in cancel.errors
    assert cancel.revision_fields == ("expectedRevision",)
    assert ERROR_CODES["turn_queue_full"].status == 429
    assert not ERROR_CODES["turn_queue_full"].retryable
    assert ERROR_CODES["turn_not_queued"].status == 409
    assert INPUT_PREVIEW_MAX_BYTES == 160
    wait = REGISTRY.get("session.wait")
    assert wait is not None
    with pytest.raises(MaiaError, match="waitMilliseconds: must be an integer from 0 to 4000"):
        decode_input(wait, {"sessionId": "s", "states": ["idle"], "waitMilliseconds": 4001})
    with pytest.raises(MaiaError, match="states: states or activities"):
        decode_input(wait, {"sessionId": "s"})
    with pytest.raises(MaiaError, match=r"activities\[0\]: must be one of"):
        decode_input(wait, {"sessionId": "s", "activities": ["sleeping"]})


def test_decode_and_encode_at_the_edges() -> None:
    """decode_input builds the input type; encode_output refuses a value of another type."""
    op = REGISTRY.get("turn.send")
    assert op is not None
    value = decode_input(op, {"commandId": "c1", "sessionId": "session_1", "text": "hi"})
    assert isinstance(value, op.input_type)  # type: ignore[arg-type]
    with pytest.raises(MaiaError) as caught:
        decode_input(op, None)
    assert caught.value.message == "params: must be an object"
    with pytest.raises(TypeError):
        encode_output(op, value)


def test_protocol_and_capabilities() -> None:
    """The protocol version and the Node's capabilities are declared in the protocol."""
    assert PROTOCOL_VERSION == "maia.protocol/v1alpha1"
    names = [name for name, _ in NODE_CAPABILITIES]
    assert len(names) == len(set(names))
    assert "turn-queue" in names


def test_digest_is_stable_and_covers_schemas() -> None:
    """The digest is the same for the same ops and changes when a schema limit changes."""
    assert build_registry(list(REGISTRY)).digest == REGISTRY.digest

    @attrs.frozen
    class In:  # same name, another limit
        """Input with a commandId."""

        command_id: str = field(max_length=5)

    assert build_registry([_op()]).digest != build_registry([_op(input_type=In)]).digest


def test_pinned_digest_is_the_computed_one() -> None:
    """The generated REGISTRY_DIGEST, which every hello sends, is the digest of today's ops
    (run `maia contract generate` when this fails); a pinned digest is only ever that."""
    assert REGISTRY.computed_digest == REGISTRY_DIGEST
    assert REGISTRY.digest == REGISTRY_DIGEST
    stale = build_registry([_op()], digest=REGISTRY_DIGEST)
    assert stale.digest == REGISTRY_DIGEST != stale.computed_digest


def test_lazy_registry_is_the_built_one() -> None:
    """Maia's lazy registry holds exactly the ops its groups build, in the same order, and
    its generated index names, for each op, the group that really holds it."""
    from maia.protocol import OPERATION_GROUPS
    from maia.protocol._generated import OPERATION_INDEX
    from maia.protocol._registry import lazy_registry

    def group_ops(group: str) -> tuple[OperationDescriptor, ...]:
        module, _, name = group.partition(":")
        return tuple(getattr(importlib.import_module(module), name))

    built = build_registry([op for group in OPERATION_GROUPS for op in group_ops(group)])
    fresh = lazy_registry(OPERATION_GROUPS, OPERATION_INDEX, digest=REGISTRY_DIGEST)
    assert fresh.ids() == built.ids() == REGISTRY.ids()
    assert fresh.get("node.status") is built.get("node.status")
    assert "node.start" not in fresh  # a local command, not an op: nothing loaded for it
    assert list(fresh) == list(built)
    for op_id, group in OPERATION_INDEX.items():
        assert op_id in {op.operation_id for op in group_ops(group)}


def test_a_stale_index_costs_time_never_an_op() -> None:
    """With an empty index every op is still found (by loading every group)."""
    from maia.protocol import OPERATION_GROUPS
    from maia.protocol._registry import lazy_registry

    stale = lazy_registry(OPERATION_GROUPS, {}, digest=REGISTRY_DIGEST)
    assert stale.get("session.list") is REGISTRY.get("session.list") is not None
    assert stale.get("no.such.op") is None
    assert len(stale) == len(REGISTRY)


def test_no_descriptor_declares_an_error_its_op_cannot_answer() -> None:
    """The errors issue 20's fixtures found declared and never raised are gone where the
    spec gives them no case (the fixtures reach the ones kept), and `mutation(without=)`
    refuses a name that is not one of its defaults."""
    from maia.protocol._common import mutation

    dropped = {
        "session.rename": {"invalid_state"},
        "session.create": {"invalid_state", "storage_conflict"},
        "config.admit.preview": {"invalid_state"},
        "project.add": {"storage_conflict"},
        "project.relocate.confirm": {"storage_conflict"},
    }
    for op_id, codes in dropped.items():
        op = REGISTRY.get(op_id)
        assert op is not None
        assert not codes & set(op.errors), op_id
    kept = {"routine.pause": "idempotency_conflict", "routine.resume": "idempotency_conflict",
            "webhooks.change.preview": "idempotency_conflict",
            "config.admit.confirm": "invalid_state"}  # fmt: skip
    for op_id, code in kept.items():
        op = REGISTRY.get(op_id)
        assert op is not None
        assert code in op.errors, op_id
    with pytest.raises(RegistryError, match="without names"):
        mutation(operation_id="x.y", agent_exposure="eligible", without=("invalid_state",))
