"""Session, Project and reference operations of the first slice (spec: Session wait
operation; issue 7). Mutations take a commandId and answer `delivery` and a `receiptId`.
"""

# ruff: noqa: RUF009  (field() returns attrs.field: a field definition, not a shared default)

from __future__ import annotations

from typing import Any, ClassVar, Literal

import attrs

from maia.core._fields import field
from maia.core._limits import (
    MAX_REFERENCE_CANDIDATES,
    MAX_REFERENCE_LENGTH,
    MAX_SESSION_ARCHIVE_SUMMARY_BYTES,
    MAX_SESSION_SETTLED_IDLE_SECONDS,
    MAX_SESSION_TRANSCRIPT_PATH_BYTES,
    PAGE_LIMIT_DEFAULT,
    PAGE_LIMIT_MAX,
    PROJECT_KEY_PATTERN,
)

from ._common import (
    ACTIVITIES,
    SESSION_STATES,
    Activity,
    Delivery,
    Project,
    Session,
    SessionState,
    command_id_field,
    cursor_field,
    executor_field,
    id_field,
    labels_field,
    mutation,
    operation,
    path_field,
    revision_field,
    title_field,
    wait_milliseconds_field,
)


def _limit_field() -> int:
    result: int = field(
        doc="Page size.", default=PAGE_LIMIT_DEFAULT, minimum=1, maximum=PAGE_LIMIT_MAX
    )
    return result


def _expected_revision() -> int | None:
    result: int | None = revision_field(
        "The Session revision the change depends on (refused with revision_conflict if stale).",
        default=None,
    )
    return result


@attrs.frozen
class SessionResult:
    """A Session changed by a mutation, how the command was delivered and its receipt."""

    delivery: Delivery = field(doc="new, or duplicate for a retried commandId.")
    receipt_id: str = id_field("The command's receipt.")
    session: Session = field(doc="The Session after the change.")


@attrs.frozen
class SessionCreateInput:
    """Create a Session's metadata in a Project; nothing starts until a turn is sent."""

    command_id: str = command_id_field()
    project_id: str = id_field("The Project the Session works in.")
    executor: str | None = executor_field(
        "Executor reference (absent: the Project's defaults.executorRef, else builtin:echo; "
        "refused with configuration_invalid when the Project's allowedExecutors does not "
        "list it).",
        default=None,
    )
    title: str | None = title_field("Human title.", default=None)
    labels: tuple[str, ...] = labels_field("Labels (at most 16).")
    cwd: str | None = path_field(
        "Start directory inside the Project (default: its root).", default=None
    )
    machine: str | None = field(
        doc="Run the Session's worker on this enrolled Execution Node (machine list).",
        default=None,
        pattern=r"^[a-z][a-z0-9-]{0,62}$",
        pattern_doc="must be a machine name",
    )


@attrs.frozen
class SessionListInput:
    """Filter and page Sessions. Filters combine with AND; labels must all be present."""

    project_id: str | None = id_field("Only this Project's Sessions.", default=None)
    labels: tuple[str, ...] = labels_field("Only Sessions carrying every one of these labels.")
    state: tuple[SessionState, ...] = field(
        doc="Only Sessions in one of these states.", factory=tuple, max_items=len(SESSION_STATES)
    )
    settled: bool | None = field(
        doc="Only settled (true) or unsettled (false) Sessions.", default=None
    )
    idle_for_seconds: int | None = field(
        doc="Only Sessions idle at least this long.",
        default=None,
        minimum=0,
        maximum=MAX_SESSION_SETTLED_IDLE_SECONDS,
    )
    include_archived: bool = field(doc="Include archived Sessions.", default=False)
    limit: int = _limit_field()
    cursor: str | None = cursor_field()


@attrs.frozen
class SessionListOutput:
    """One page of Sessions, newest first."""

    sessions: tuple[Session, ...] = field(doc="The page.", max_items=PAGE_LIMIT_MAX)
    next_cursor: str | None = field(doc="Cursor of the next page; null on the last.")


@attrs.frozen
class SessionRef:
    """Names one Session."""

    session_id: str = id_field("The Session.")


@attrs.frozen
class SessionShowOutput:
    """One Session."""

    session: Session = field(doc="The Session.")


def _states_or_activities(value: SessionWaitInput) -> tuple[str, str] | None:
    if not value.states and not value.activities:
        return ("states", "states or activities must name at least one value")
    return None


@attrs.frozen
class SessionWaitInput:
    """Wait (at most 4 s a call) for a Session to reach one of the states or activities."""

    __maia_refine__: ClassVar[Any] = staticmethod(_states_or_activities)
    __maia_schema__: ClassVar[dict[str, Any]] = {
        "anyOf": [{"required": ["states"]}, {"required": ["activities"]}]
    }

    session_id: str = id_field("The Session.")
    states: tuple[SessionState, ...] = field(
        doc="Any of these states satisfies the wait.",
        factory=tuple,
        min_items=1,
        max_items=len(SESSION_STATES),
    )
    activities: tuple[Activity, ...] = field(
        doc="Any of these activities satisfies the wait.",
        factory=tuple,
        min_items=1,
        max_items=len(ACTIVITIES),
    )
    wait_milliseconds: int = wait_milliseconds_field()


@attrs.frozen
class SessionWaitOutput:
    """Whether the wait was satisfied, and the Session as it is now."""

    method: Literal["session.wait"] = field(doc="Always session.wait.")
    satisfied: bool = field(doc="False when the wait ended first.")
    session: Session = field(doc="The Session now.")


@attrs.frozen
class SessionStopInput:
    """Stop a Session's worker (bounded: interrupt, then SIGTERM, then SIGKILL)."""

    command_id: str = command_id_field()
    session_id: str = id_field("The Session.")
    expected_revision: int | None = _expected_revision()


@attrs.frozen
class SessionArchiveInput:
    """Archive a Session, with an optional summary and transcript path."""

    command_id: str = command_id_field()
    session_id: str = id_field("The Session.")
    expected_revision: int | None = _expected_revision()
    summary: str | None = field(
        doc="What the Session did.",
        default=None,
        max_length=MAX_SESSION_ARCHIVE_SUMMARY_BYTES,
        length_unit="utf8-bytes",
    )
    transcript_path: str | None = field(
        doc="Where its transcript was written.",
        default=None,
        min_length=1,
        max_length=MAX_SESSION_TRANSCRIPT_PATH_BYTES,
        length_unit="utf8-bytes",
    )


@attrs.frozen
class SessionRenameInput:
    """Give a Session a new title."""

    command_id: str = command_id_field()
    session_id: str = id_field("The Session.")
    title: str = title_field("The new title (trimmed, not empty).")
    expected_revision: int | None = _expected_revision()


# What reference.resolve looks up (routine, webhook and approval since registry 0.13.0).
ReferenceKind = Literal["session", "project", "turn", "routine", "webhook", "approval"]


@attrs.frozen
class ReferenceResolveInput:
    """Turn what a person typed (an ID, a prefix of 4+ hex digits, a title or name) into an ID."""

    reference: str = field(
        doc="What was typed.", min_length=1, max_length=MAX_REFERENCE_LENGTH, trim=True
    )
    kind: ReferenceKind = field(doc="What it names.", default="session")
    project_id: str | None = id_field("Look only in this Project.", default=None)


@attrs.frozen
class ReferenceCandidate:
    """One thing a reference may name."""

    id: str = id_field("Its exact ID.")
    label: str | None = field(doc="Its title or name.", default=None, max_length=256)


@attrs.frozen
class ReferenceResolveOutput:
    """resolved: `id` is the one match; ambiguous: the candidates (at most 10), `id` null."""

    status: Literal["resolved", "ambiguous"] = field(doc="resolved or ambiguous.")
    kind: ReferenceKind = field(doc="What was looked up.")
    id: str | None = id_field("The exact ID when resolved.", nullable=True)
    candidates: tuple[ReferenceCandidate, ...] = field(
        doc="Matches when ambiguous.", max_items=MAX_REFERENCE_CANDIDATES
    )
    more_candidates: bool = field(
        doc="More matched than the candidates listed (ambiguous only).", default=False
    )


@attrs.frozen
class ProjectAddInput:
    """Add a Project: an existing absolute root directory (canonicalized by the Node)."""

    command_id: str = command_id_field()
    root_path: str = path_field("Absolute root directory; it must exist.", pattern=r"^/")
    project_key: str | None = field(
        doc="Human key (default: from the directory name).",
        default=None,
        pattern=PROJECT_KEY_PATTERN,
    )


@attrs.frozen
class ProjectResult:
    """A Project added by project.add, with delivery and receipt."""

    delivery: Delivery = field(doc="new or duplicate.")
    receipt_id: str = id_field("The command's receipt.")
    project: Project = field(doc="The Project.")


@attrs.frozen
class ProjectListInput:
    """Page the Project inventory."""

    limit: int = _limit_field()
    cursor: str | None = cursor_field()


@attrs.frozen
class ProjectListOutput:
    """One page of Projects."""

    projects: tuple[Project, ...] = field(doc="The page.", max_items=PAGE_LIMIT_MAX)
    next_cursor: str | None = field(doc="Next page; null on the last.")


@attrs.frozen
class ProjectShowInput:
    """Names one Project."""

    project_id: str = id_field("The Project.")


@attrs.frozen
class ProjectShowOutput:
    """One Project."""

    project: Project = field(doc="The Project.")


_MISSING = ("resource_not_found",)
_CHANGE = ("resource_not_found", "revision_conflict", "invalid_state")

SESSION_OPERATIONS = (
    mutation(
        operation_id="session.create",
        agent_exposure="eligible",
        summary="Create a Session (metadata only; starts nothing).",
        input_type=SessionCreateInput,
        output_type=SessionResult,
        errors=("resource_not_found", "configuration_invalid"),
        # A new Session is one INSERT of a fresh ID: no revision is read before it, so no
        # second writer makes it stale; and a Project has no state that refuses Sessions.
        without=("storage_conflict",),
        event_types=("session.created",),
    ),
    operation(
        operation_id="session.list",
        agent_exposure="eligible",
        summary="List Sessions with filters and paging.",
        input_type=SessionListInput,
        output_type=SessionListOutput,
        errors=("invalid_cursor", "cursor_reset_required"),
        callers=frozenset({"local-user", "session"}),
    ),
    operation(
        operation_id="session.show",
        agent_exposure="eligible",
        summary="Show one Session.",
        input_type=SessionRef,
        output_type=SessionShowOutput,
        errors=_MISSING,
    ),
    operation(
        operation_id="session.wait",
        agent_exposure="eligible",
        summary="Wait up to 4 s for a Session state or activity.",
        input_type=SessionWaitInput,
        output_type=SessionWaitOutput,
        errors=_MISSING,
    ),
    mutation(
        operation_id="session.stop",
        agent_exposure="eligible",
        summary="Stop a Session's worker, bounded.",
        input_type=SessionStopInput,
        output_type=SessionResult,
        errors=_CHANGE,
        revision_fields=("expectedRevision",),
        event_types=("session.stopping", "session.stopped", "turn.failed"),
    ),
    mutation(
        operation_id="session.archive",
        agent_exposure="eligible",
        summary="Archive a stopped or idle Session.",
        input_type=SessionArchiveInput,
        output_type=SessionResult,
        errors=_CHANGE,
        revision_fields=("expectedRevision",),
        event_types=("session.archived",),
    ),
    mutation(
        operation_id="session.rename",
        agent_exposure="eligible",
        summary="Retitle a Session.",
        input_type=SessionRenameInput,
        output_type=SessionResult,
        # Any Session may be retitled, archived or failed ones too (the spec names no state
        # that refuses it): only its revision is checked.
        errors=("resource_not_found", "revision_conflict"),
        revision_fields=("expectedRevision",),
        event_types=("session.renamed",),
    ),
    operation(
        operation_id="reference.resolve",
        agent_exposure="eligible",
        summary="Resolve an ID prefix, title or name to an exact ID.",
        input_type=ReferenceResolveInput,
        output_type=ReferenceResolveOutput,
        errors=_MISSING,
    ),
    mutation(
        operation_id="project.add",
        agent_exposure="human-only",
        summary="Add a Project root to the inventory.",
        input_type=ProjectAddInput,
        output_type=ProjectResult,
        errors=("invalid_state", "configuration_invalid"),
        # The checks and the INSERT are one transaction on the single writer with no
        # revision read first: another writer is serialized before or after it.
        without=("storage_conflict",),
        event_types=("project.added",),
    ),
    operation(
        operation_id="project.list",
        agent_exposure="eligible",
        summary="List Projects.",
        input_type=ProjectListInput,
        output_type=ProjectListOutput,
        errors=("invalid_cursor", "cursor_reset_required"),
    ),
    operation(
        operation_id="project.show",
        agent_exposure="eligible",
        summary="Show one Project.",
        input_type=ProjectShowInput,
        output_type=ProjectShowOutput,
        errors=_MISSING,
    ),
)
