"""Routine operations (spec: Scheduled Session operations): cron-scheduled Sessions.

Ten ops. Create, disable and run are consequential: `X.preview` answers an `inputDigest`, a
one-time `proof` (the Node keeps its hash only) and a 2-minute expiry; `X.confirm` repeats
the input with both and commits in one transaction with its receipt. Pause and resume
compare-and-set `expectedRevision`. The closed error set of each op is the spec's: a stale or
spent preview, a replay with other values and a stale revision are all `storage_conflict`.
"""

# ruff: noqa: RUF009  (field() returns attrs.field: a field definition, not a shared default)

from __future__ import annotations

from typing import Final, Literal

import attrs

from maia.core._fields import field
from maia.core._limits import MAX_TURN_TEXT_LENGTH, PAGE_LIMIT_DEFAULT, PAGE_LIMIT_MAX

from ._common import (
    Delivery,
    TurnState,
    command_id_field,
    cursor_field,
    digest_field,
    executor_field,
    id_field,
    operation,
    revision_field,
    timestamp_field,
)
from ._registry import OperationDescriptor

RoutineState = Literal["active", "paused", "disabled"]
ROUTINE_STATES: Final = ("active", "paused", "disabled")
FireState = Literal["launching", "started", "failed", "skipped"]
FireReason = Literal[
    "connection_disabled", "held", "launch_failed", "outcome_unknown", "routine_not_active",
    "saturated", "workspace_unavailable", "overlap", "missed",
]  # fmt: skip
MAX_ROUTINE_NAME_LENGTH: Final = 128
MAX_PROOF_LENGTH: Final = 128
MAX_NEXT_FIRES: Final = 3
MAX_SHOWN_FIRES: Final = 20


@attrs.frozen
class RoutineSchedule:
    """When a routine fires: 5-field cron in an IANA zone (Debian cron's DST rules)."""

    cron: str = field(doc="minute hour day month weekday, e.g. 0 9 * * 1-5.", min_length=1,
                      max_length=128, trim=True)  # fmt: skip
    timezone: str = field(doc="IANA time zone, e.g. Europe/Berlin.", min_length=1, max_length=64)


@attrs.frozen
class RoutineTemplate:
    """What each fire starts: a Session in the Project whose first turn is the prompt."""

    project_id: str = id_field("The Project the fires' Sessions work in.")
    prompt: str = field(doc="The first turn's text.", min_length=1, max_length=MAX_TURN_TEXT_LENGTH)
    executor: str = executor_field("Executor reference.", default="builtin:echo")


@attrs.frozen
class Routine:
    """A routine as routine.show and routine.list return it."""

    routine_id: str = id_field("routine_ and 32 hex, derived from the actor and commandId.")
    name: str = field(doc="Human name.", min_length=1, max_length=MAX_ROUTINE_NAME_LENGTH)
    state: RoutineState = field(doc="active, paused or disabled (final).")
    revision: int = revision_field("The routine's revision.")
    schedule: RoutineSchedule = field(doc="When it fires.")
    template: RoutineTemplate = field(doc="What it starts.")
    created_at: str = timestamp_field("When it was created.")
    updated_at: str = timestamp_field("When it last changed.")
    next_fire_at: str | None = timestamp_field("The next slot; present exactly while active.",
                                               default=None)  # fmt: skip


@attrs.frozen
class FireFailure:
    """The runtime's failure, as turn.show carries it."""

    code: str = field(doc="Failure code.", min_length=1, max_length=64)
    message: str = field(doc="Human detail.", max_length=4096)


@attrs.frozen
class RoutineFire:
    """One slot (or manual run) and what became of it."""

    fire_id: str = id_field("The fire (a cron fire's ID names its slot).")
    routine_id: str = id_field("Its routine.")
    trigger_kind: Literal["cron", "manual"] = field(doc="A cron slot or a manual run.")
    scheduled_at: str = timestamp_field("The slot; a manual run's record time.")
    state: FireState = field(doc="launching, started, failed or skipped.")
    created_at: str = timestamp_field("When it was recorded.")
    updated_at: str = timestamp_field("When it last changed.")
    reason: FireReason | None = field(doc="Why it failed or was skipped.", default=None)
    session_id: str | None = id_field("The Session it started.", default=None)
    turn_id: str | None = id_field("The Session's first turn.", default=None)
    turn_state: TurnState | None = field(doc="The first turn's current state.", default=None)
    failure_reason: str | None = field(doc="Why the first turn failed.", default=None,
                                       max_length=64)  # fmt: skip
    failure: FireFailure | None = field(doc="The first turn's failure.", default=None)


@attrs.frozen
class NextFire:
    """A coming slot, as an instant and as the local wall time it stands for."""

    at: str = timestamp_field("The instant (UTC).")
    local: str = field(doc="Local time with offset in the routine's zone.", max_length=40)


def _proof() -> str:
    result: str = field(doc="The preview's one-time proof.", min_length=1,
                        max_length=MAX_PROOF_LENGTH)  # fmt: skip
    return result


def _expected() -> int:
    result: int = revision_field("The routine revision the change depends on.")
    return result


@attrs.frozen
class RoutineCreatePreviewInput:
    """Preview a routine: its ID, next fires, and the proof its confirm must carry."""

    command_id: str = command_id_field()
    name: str = field(doc="Human name.", min_length=1, max_length=MAX_ROUTINE_NAME_LENGTH,
                      trim=True)  # fmt: skip
    schedule: RoutineSchedule = field(doc="When it fires.")
    template: RoutineTemplate = field(doc="What each fire starts (no connections exist yet).")
    paused: bool = field(doc="Create it paused: it fires only after a resume.", default=False)


@attrs.frozen
class RoutineCreateConfirmInput:
    """Create the previewed routine: the same input, with the preview's digest and proof."""

    command_id: str = command_id_field()
    name: str = field(doc="Human name.", min_length=1, max_length=MAX_ROUTINE_NAME_LENGTH,
                      trim=True)  # fmt: skip
    schedule: RoutineSchedule = field(doc="When it fires.")
    template: RoutineTemplate = field(doc="What each fire starts.")
    input_digest: str = digest_field("The preview's inputDigest.")
    proof: str = _proof()
    paused: bool = field(doc="Create it paused.", default=False)


@attrs.frozen
class RoutineCreatePreviewOutput:
    """What the confirm will create, and the proof it must carry (valid 2 minutes)."""

    routine_id: str = id_field("The routine the confirm creates.")
    next_fires: tuple[NextFire, ...] = field(
        doc="The schedule's next slots (a paused routine fires only after a resume).",
        max_items=MAX_NEXT_FIRES,
    )
    input_digest: str = digest_field("sha256 of the bound input.")
    proof: str = _proof()
    expires_at: str = timestamp_field("When the proof stops working.")


@attrs.frozen
class RoutineChangeInput:
    """Change one routine at the revision the caller read."""

    command_id: str = command_id_field()
    routine_id: str = id_field("The routine.")
    expected_revision: int = _expected()


@attrs.frozen
class RoutineConfirmInput:
    """Confirm a previewed change: the same input, with the preview's digest and proof."""

    command_id: str = command_id_field()
    routine_id: str = id_field("The routine.")
    expected_revision: int = _expected()
    input_digest: str = digest_field("The preview's inputDigest.")
    proof: str = _proof()


@attrs.frozen
class RoutinePreviewOutput:
    """The routine the confirm will act on, and the proof it must carry (valid 2 minutes)."""

    routine_id: str = id_field("The routine.")
    name: str = field(doc="Its name.", max_length=MAX_ROUTINE_NAME_LENGTH)
    input_digest: str = digest_field("sha256 of the bound input.")
    proof: str = _proof()
    expires_at: str = timestamp_field("When the proof stops working.")


@attrs.frozen
class RoutineResult:
    """A routine changed by a mutation, how the command was delivered, and its receipt."""

    delivery: Delivery = field(doc="new, or duplicate for a retried commandId.")
    receipt_id: str = id_field("The command's receipt.")
    routine: Routine = field(doc="The routine after the change.")


@attrs.frozen
class RoutineRunResult:
    """The manual fire recorded for the next tick to claim, with delivery and receipt."""

    delivery: Delivery = field(doc="new, or duplicate for a retried commandId.")
    receipt_id: str = id_field("The command's receipt.")
    fire: RoutineFire = field(doc="The launching fire (triggerKind manual).")


@attrs.frozen
class RoutineRef:
    """Names one routine."""

    routine_id: str = id_field("The routine.")


@attrs.frozen
class RoutineShowOutput:
    """A routine and its newest 20 fires, newest first."""

    routine: Routine = field(doc="The routine.")
    fires: tuple[RoutineFire, ...] = field(doc="Its newest fires.", max_items=MAX_SHOWN_FIRES)


@attrs.frozen
class RoutineListInput:
    """Filter and page routines."""

    project_id: str | None = id_field("Only this Project's routines.", default=None)
    state: tuple[RoutineState, ...] = field(doc="Only routines in these states.",
                                            factory=tuple, max_items=3)  # fmt: skip
    limit: int = field(doc="Page size.", default=PAGE_LIMIT_DEFAULT, minimum=1,
                       maximum=PAGE_LIMIT_MAX)  # fmt: skip
    cursor: str | None = cursor_field()


@attrs.frozen
class RoutineListOutput:
    """One page of routines, by ID."""

    routines: tuple[Routine, ...] = field(doc="The page.", max_items=PAGE_LIMIT_MAX)
    next_cursor: str | None = field(doc="Cursor of the next page; null on the last.")


CREATE_ERRORS: Final = (
    "routine_schedule_invalid", "routine_interval_too_short", "routine_limit_reached",
    "configuration_invalid", "storage_conflict", "resource_not_found",
)  # fmt: skip
CHANGE_ERRORS: Final = ("storage_conflict", "resource_not_found")
# pause and resume follow the generic rule: a commandId reused with other input.
PAUSE_ERRORS: Final = (*CHANGE_ERRORS, "idempotency_conflict")
RUN_ERRORS: Final = (
    "storage_conflict", "resource_not_found", "routine_busy", "routine_not_active", "held",
    "connection_disabled",
)  # fmt: skip


def _confirmed(risk: Literal["consequential", "destructive"], **kw: object) -> OperationDescriptor:
    """A confirm: required idempotency and confirmation, a receipt."""
    return operation(risk=risk, idempotency="required", confirmation="required", receipt=True,
                     effect_class="native-idempotent", **kw)  # fmt: skip


def _changed(**kw: object) -> OperationDescriptor:
    return operation(risk="reversible", idempotency="required", receipt=True,
                     effect_class="native-idempotent", revision_fields=("expectedRevision",),
                     **kw)  # fmt: skip


ROUTINE_OPERATIONS: Final = (
    operation(
        operation_id="routine.create.preview",
        agent_exposure="eligible",
        summary="Preview a routine: its ID, next 3 fires, digest and one-time proof.",
        input_type=RoutineCreatePreviewInput,
        output_type=RoutineCreatePreviewOutput,
        errors=CREATE_ERRORS,
    ),
    _confirmed(
        "consequential",
        operation_id="routine.create.confirm",
        agent_exposure="human-only",
        summary="Create the previewed routine (at revision 1).",
        input_type=RoutineCreateConfirmInput,
        output_type=RoutineResult,
        errors=CREATE_ERRORS,
        event_types=("routine.created",),
    ),
    _changed(
        operation_id="routine.pause",
        agent_exposure="eligible",
        summary="Pause a routine: no slot fires until it is resumed.",
        input_type=RoutineChangeInput,
        output_type=RoutineResult,
        errors=PAUSE_ERRORS,
        event_types=("routine.paused",),
    ),
    _changed(
        operation_id="routine.resume",
        agent_exposure="eligible",
        summary="Resume a routine at the first slot after now (missed slots are not replayed).",
        input_type=RoutineChangeInput,
        output_type=RoutineResult,
        errors=PAUSE_ERRORS,
        event_types=("routine.resumed",),
    ),
    operation(
        operation_id="routine.disable.preview",
        agent_exposure="eligible",
        summary="Preview disabling a routine (final): digest and one-time proof.",
        input_type=RoutineChangeInput,
        output_type=RoutinePreviewOutput,
        errors=CHANGE_ERRORS,
    ),
    _confirmed(
        "destructive",
        operation_id="routine.disable.confirm",
        agent_exposure="human-only",
        summary="Disable the previewed routine; it never fires again.",
        input_type=RoutineConfirmInput,
        output_type=RoutineResult,
        errors=CHANGE_ERRORS,
        event_types=("routine.disabled",),
        revision_fields=("expectedRevision",),
    ),
    operation(
        operation_id="routine.run.preview",
        agent_exposure="eligible",
        summary="Preview a manual run of an active routine: digest and one-time proof.",
        input_type=RoutineChangeInput,
        output_type=RoutinePreviewOutput,
        errors=RUN_ERRORS,
    ),
    _confirmed(
        "consequential",
        operation_id="routine.run.confirm",
        agent_exposure="human-only",
        summary="Record a manual fire now; the next scheduler tick launches it.",
        input_type=RoutineConfirmInput,
        output_type=RoutineRunResult,
        errors=RUN_ERRORS,
        event_types=("routine.fire_requested",),
        revision_fields=("expectedRevision",),
    ),
    operation(
        operation_id="routine.show",
        agent_exposure="eligible",
        summary="Show a routine and its newest 20 fires.",
        input_type=RoutineRef,
        output_type=RoutineShowOutput,
        errors=("resource_not_found",),
    ),
    operation(
        operation_id="routine.list",
        agent_exposure="eligible",
        summary="List routines.",
        input_type=RoutineListInput,
        output_type=RoutineListOutput,
        errors=("invalid_cursor", "cursor_reset_required"),
    ),
)
