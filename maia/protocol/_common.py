"""Field kinds and shapes several operations share: IDs, revisions, timestamps, pages,
the mutation result fields, Sessions, turns and projects as the wire carries them.
"""

# ruff: noqa: RUF009  (field() returns attrs.field: a field definition, not a shared default)

from __future__ import annotations

from typing import Any, Literal

import attrs

from maia.core._field_kinds import ID_PHRASE as ID_PHRASE
from maia.core._field_kinds import digest_field as digest_field
from maia.core._field_kinds import id_field as id_field
from maia.core._field_kinds import timestamp_field as timestamp_field
from maia.core._fields import field, spec
from maia.core._ids import WIRE_ID_MAX_LENGTH
from maia.core._limits import (
    MAX_CURSOR_LENGTH,
    MAX_LABEL_LENGTH,
    MAX_PATH_BYTES,
    MAX_SESSION_LABELS,
    MAX_SESSION_TITLE_LENGTH,
    PROJECT_KEY_PATTERN,
    WAIT_MILLISECONDS_MAX,
)
from maia.core._refs import DEFINITION_REF_PATTERN

from ._agent_shapes import SessionPrompt, SessionStatus, Usage
from ._registry import AGENT_EXPOSURES, COMMON_ERRORS, OperationDescriptor, RegistryError

LABEL_PATTERN = r"^[a-z0-9][a-z0-9._:/=-]*$"
OPERATION_ID_PATTERN = r"^[a-z][a-z0-9-]*(\.[a-z][a-z0-9-]*)+$"
REASON_PATTERN = r"^[a-z][a-z0-9_]{0,63}$"

SessionState = Literal[
    "idle",
    "starting",
    "running",
    "waiting-approval",
    "interrupted",
    "recovering",
    "stopping",
    "stopped",
    "failed",
]
SESSION_STATES: tuple[str, ...] = SessionState.__args__  # type: ignore[attr-defined]
Activity = Literal["stopped", "waiting_approval", "working", "idle"]
ACTIVITIES: tuple[str, ...] = Activity.__args__  # type: ignore[attr-defined]
TurnState = Literal["queued", "dispatching", "running", "completed", "failed", "interrupted"]
TURN_STATES: tuple[str, ...] = TurnState.__args__  # type: ignore[attr-defined]
Delivery = Literal["new", "duplicate"]
ItemKind = Literal[
    "message",
    "reasoning",
    "tool_call",
    "command",
    "file_change",
    "approval_request",
    "error",
    "usage",
]


def command_id_field() -> Any:
    return id_field("Idempotency key: a retry of the same command reuses it.")


def revision_field(doc: str, **kwargs: Any) -> Any:
    return field(doc=doc, minimum=1, **kwargs)


def count_field(doc: str, **kwargs: Any) -> Any:
    return field(doc=doc, minimum=0, **kwargs)


def cursor_field(doc: str = "Opaque page cursor from the previous page.") -> Any:
    return field(doc=doc, default=None, min_length=1, max_length=MAX_CURSOR_LENGTH)


def wait_milliseconds_field() -> Any:
    """A bounded server-side wait: one call stays inside the 5 s request deadline."""
    return field(
        doc="How long to wait in this call.",
        default=WAIT_MILLISECONDS_MAX,
        minimum=0,
        maximum=WAIT_MILLISECONDS_MAX,
    )


def labels_field(doc: str) -> Any:
    return field(
        doc=doc,
        factory=tuple,
        max_items=MAX_SESSION_LABELS,
        items=spec(
            min_length=1,
            max_length=MAX_LABEL_LENGTH,
            pattern=LABEL_PATTERN,
            pattern_doc="must be lowercase letters, digits and . _ : / = -",
        ),
    )


def title_field(doc: str, **kwargs: Any) -> Any:
    return field(doc=doc, min_length=1, max_length=MAX_SESSION_TITLE_LENGTH, trim=True, **kwargs)


def path_field(doc: str, **kwargs: Any) -> Any:
    return field(
        doc=doc, min_length=1, max_length=MAX_PATH_BYTES, length_unit="utf8-bytes", **kwargs
    )


def executor_field(doc: str, **kwargs: Any) -> Any:
    return field(
        doc=doc,
        max_length=2 * WIRE_ID_MAX_LENGTH + 9,
        pattern=DEFINITION_REF_PATTERN,
        pattern_doc="must be builtin:<id>, user:<id> or project:<project-id>/<id>",
        **kwargs,
    )


@attrs.frozen
class Empty:
    """No parameters."""


@attrs.frozen
class Project:
    """A Project: a root directory Sessions work in."""

    project_id: str = id_field("Node-owned opaque ID.")
    project_key: str = field(doc="Portable human key.", pattern=PROJECT_KEY_PATTERN)
    root_path: str = path_field("Canonical absolute root.")
    workspace_kind: Literal["repository", "directory"] = field(doc="What the root holds.")
    revision: int = revision_field("The Project's revision.")
    created_at: str = timestamp_field("When it was added.")


@attrs.frozen
class Session:
    """A Session as session.show, session.list and session.wait return it."""

    session_id: str = id_field("The Session's ID.")
    project_id: str = id_field("Its Project.")
    executor: str = executor_field("The executor that runs its turns.")
    state: SessionState = field(doc="Lifecycle state.")
    revision: int = revision_field("The Session's revision.")
    created_at: str = timestamp_field("When it was created.")
    updated_at: str = timestamp_field("When its state last changed.")
    cwd: str = path_field("Absolute start directory inside the Project.")
    labels: tuple[str, ...] = labels_field("Labels, sorted.")
    archived: bool = field(doc="Whether it is archived.", default=False)
    title: str | None = title_field("Human title.", default=None)
    activity: Activity | None = field(doc="Last announced activity.", default=None)
    latest_turn_id: str | None = id_field("Its latest turn.", default=None)
    latest_turn_state: TurnState | None = field(doc="State of the latest turn.", default=None)
    pending_turns: int = count_field("Queued plus running turns.", default=0)
    settled: bool | None = field(doc="Idle long enough to count as settled.", default=None)
    settled_reason: str | None = field(doc="Why it settled.", default=None, pattern=REASON_PATTERN)
    archived_at: str | None = timestamp_field("When it was archived.", default=None)
    summary: str | None = field(doc="Archive summary.", default=None)
    transcript_path: str | None = path_field("Archived transcript file.", default=None)
    status: SessionStatus | None = field(
        doc="What a person acts on (derived; the state stays the source of truth).", default=None
    )
    prompt: SessionPrompt | None = field(
        doc="The approval it waits on, while status is approval or question.", default=None
    )
    usage: Usage | None = field(doc="Token and cost totals over its turns.", default=None)
    failure_message: str | None = field(
        doc="Why its last worker launch failed (it takes turns again once the cause is"
        " fixed), or why it failed; absent once a worker came up.",
        default=None,
        max_length=4096,
    )


@attrs.frozen
class Turn:
    """A turn: one prompt to a Session and what became of it."""

    turn_id: str = id_field("The turn's ID.")
    session_id: str = id_field("Its Session.")
    state: TurnState = field(doc="Turn state.")
    revision: int = revision_field("The turn's own revision.")
    created_at: str = timestamp_field("When it was sent.")
    input_preview: str = field(
        doc="Start of the prompt text.", max_length=160, length_unit="utf8-bytes"
    )
    started_at: str | None = timestamp_field("When it began running.", default=None)
    completed_at: str | None = timestamp_field("When it ended.", default=None)
    failure_reason: str | None = field(
        doc="Why it failed: turn_rejected (cancelled while queued), runtime_lost (the Node "
        "died while it ran), worker_failed, wall_time_exceeded, ...",
        default=None,
        pattern=REASON_PATTERN,
    )
    failure_message: str | None = field(doc="Human detail.", default=None, max_length=4096)
    output_text: str | None = field(doc="Assembled reply text.", default=None)
    usage: Usage | None = field(doc="This turn's tokens and cost, when reported.", default=None)
    output_truncated: bool | None = field(
        doc="True when outputText is only the reply's first 262,144 characters (or 256 KiB):"
        " turn.show's items and an item's artifactPath file have the rest.",
        default=None,
    )


MUTATION_ERRORS: tuple[str, ...] = ("idempotency_conflict", "storage_conflict")


def mutation(**kwargs: Any) -> OperationDescriptor:
    """A reversible mutation: idempotent by commandId, with a receipt (the spec's defaults).

    It declares `MUTATION_ERRORS` unless `without` names one the op cannot answer (say why
    at the call: a descriptor must not declare an error no input reaches)."""
    without: tuple[str, ...] = tuple(kwargs.pop("without", ()))
    unknown = set(without) - set(MUTATION_ERRORS)
    if unknown:
        raise RegistryError(f"{kwargs.get('operation_id')}: without names {sorted(unknown)}, "
                            f"not one of {MUTATION_ERRORS}")  # fmt: skip
    defaults: dict[str, Any] = {
        "risk": "reversible",
        "idempotency": "required",
        "receipt": True,
        "effect_class": "native-idempotent",
    }
    errors = (*kwargs.pop("errors", ()), *(e for e in MUTATION_ERRORS if e not in without))
    return operation(**{**defaults, **kwargs, "errors": errors})


def operation(**kwargs: Any) -> OperationDescriptor:
    """An op (a read unless told), with the errors every op may answer added to its own.

    Raises RegistryError at import when the op states no `agent_exposure` (the registry
    refuses it too, for descriptors built otherwise)."""
    if kwargs.get("agent_exposure") not in AGENT_EXPOSURES:
        raise RegistryError(
            f"{kwargs.get('operation_id')}: not classified for agent exposure (set "
            f"agent_exposure to {', '.join(AGENT_EXPOSURES)}; docs/versioning.md says which)"
        )
    errors = tuple(sorted({*kwargs.pop("errors", ()), *COMMON_ERRORS}))
    return OperationDescriptor(**kwargs, errors=errors)
