"""Pages under the 1 MiB frame. events.read, session.list, receipt.list, approval.list,
routine.list, project.list and webhooks.list size a page by `limit` (up to 500 events, 100
Sessions, receipts, approvals, routines, Projects or webhooks), and such a page can pass 1 MiB
of UTF-8: events whose payloads carry item texts, Sessions with 16 KiB archive summaries,
receipts naming 256 events each, approvals with 8 KiB summaries, routines with 64 KiB prompts,
Projects whose roots are 4 KiB paths, webhooks with 2,048-character URLs, 32 event types and
256-character descriptions (6 bytes a control character as JSON). The page is cut after the
last entry that fits `PAGE_BUDGET_BYTES` (events.read: `hasMore`; the lists: `nextCursor`),
the cursor after that entry; the first entry always travels, so following the cursor ends
(one too large for a frame alone is refused `frame_too_large` by the Node, typed). An entry's
size is counted from above (its long texts as JSON, a fixed allowance for its short fields),
so a cut page fits and a page of small entries is never cut."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import orjson

from maia.protocol import Project, Receipt, Routine, Session
from storage import EventRecord

# Of the 1 MiB frame: 64 KiB stay for the envelope, the cursors and the page's own fields.
PAGE_BUDGET_BYTES = 1024 * 1024 - 64 * 1024
# An entry's field names, numbers, enums, timestamps and short bounded IDs as JSON.
EVENT_FIELDS_BYTES = 512
SESSION_FIELDS_BYTES = 2048
RECEIPT_FIELDS_BYTES = 1024
RECEIPT_ENTRY_BYTES = 192  # a target (type, ID, disposition, revisions) or a listed ID
APPROVAL_FIELDS_BYTES = 1024
ROUTINE_FIELDS_BYTES = 1024
PROJECT_FIELDS_BYTES = 512
WEBHOOK_FIELDS_BYTES = 512

T = TypeVar("T")


def _text_bytes(text: str | None) -> int:
    """At least the bytes of `text` as JSON (IDs: ASCII without escapes, quotes aside)."""
    if text is None:
        return 0
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def _json_bytes(text: str | None) -> int:
    return 0 if text is None else len(orjson.dumps(text))


def event_bytes(record: EventRecord) -> int:
    """At least the bytes `record` takes as an Event in the answer."""
    ids = (
        record.event_id, record.event_type, record.owner_type, record.owner_id,
        record.project_id, record.session_id, record.actor_id, record.causation_id,
        record.correlation_id, record.attempt_id, record.activation_id, record.command_id,
    )  # fmt: skip
    return EVENT_FIELDS_BYTES + sum(map(_text_bytes, ids)) + len(orjson.dumps(record.payload))


def session_bytes(session: Session) -> int:
    """At least the bytes `session` takes in a session.list page."""
    texts = (session.summary, session.cwd, session.transcript_path, session.title,
             session.failure_message)  # fmt: skip
    labels = sum(_json_bytes(label) + 1 for label in session.labels)
    return SESSION_FIELDS_BYTES + sum(map(_json_bytes, texts)) + labels


def receipt_bytes(receipt: Receipt) -> int:
    """At least the bytes `receipt` takes in a receipt.list page."""
    entries = len(receipt.targets) + len(receipt.event_ids) + len(receipt.effect_ids)
    return RECEIPT_FIELDS_BYTES + RECEIPT_ENTRY_BYTES * entries


def approval_bytes(approval: dict[str, Any]) -> int:
    """At least the bytes `approval` (approval.list's wire form) takes in a page."""
    texts = (approval["summary"], approval.get("message"), *approval["options"])
    return APPROVAL_FIELDS_BYTES + sum(_json_bytes(text) + 1 for text in texts)


def routine_bytes(routine: Routine) -> int:
    """At least the bytes `routine` takes in a routine.list page."""
    texts = (routine.name, routine.template.prompt, routine.template.executor,
             routine.schedule.cron, routine.schedule.timezone)  # fmt: skip
    return ROUTINE_FIELDS_BYTES + sum(map(_json_bytes, texts))


def project_bytes(project: Project) -> int:
    """At least the bytes `project` takes in a project.list page."""
    return PROJECT_FIELDS_BYTES + _json_bytes(project.root_path) + _json_bytes(project.project_key)


def webhook_bytes(webhook: dict[str, Any]) -> int:
    """At least the bytes `webhook` (webhooks.list's wire form) takes in a page."""
    texts = (webhook["url"], webhook["secretEnv"], webhook.get("description"),
             webhook.get("stateReason"), *webhook["eventTypes"])  # fmt: skip
    return WEBHOOK_FIELDS_BYTES + sum(_json_bytes(text) + 1 for text in texts)


def fitting(entries: Sequence[T], size: Callable[[T], int], budget: int = PAGE_BUDGET_BYTES) -> int:
    """How many of `entries`, from the first, fit `budget` bytes by `size` (at least one)."""
    used = 0
    for index, entry in enumerate(entries):
        used += size(entry)
        if used > budget:
            return max(index, 1)
    return len(entries)
