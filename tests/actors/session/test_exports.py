"""The public names of `actors.session`, `maia.service` and `maia.config` are exported once;
names left out are the listed internal helpers of the actor's own modules."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..._exports import assert_once_and_resolving, own_exports, private_modules, public_definitions

ROOT = Path(__file__).resolve().parents[3]
PACKAGES = {
    "actors.session": ROOT / "actors" / "session",
    "maia.service": ROOT / "maia" / "service",
    "maia.config": ROOT / "maia" / "config",
}
# Helpers shared between the actor's own modules (and the handlers' plumbing), not its API.
INTERNAL = {
    "actors.session": {
        "activity_of", "new_turn_id", "saturated", "SessionCore", "ClientOps", "WorkerDriver",
        "TurnProgress", "SendBatch", "Capacity", "Attempt", "TurnBuffer", "Resumption",
        "WorkerLauncher", "ApprovalDesk", "read_memory", "worker_call", "placeholders",
        "insert_turn", "Draft", "TurnMemo", "OpenItem", "emit",
        "session_step", "set_activity", "touch_session", "wake", "apply_plan",
        "turn_step", "end_turn", "flush_item", "record_attempt", "end_attempt", "open_attempts",
        "Leftover", "session_from_row", "SESSION_COLUMNS",
        "record_failure", "closed_refusal", "MAX_FAILURE_CHARS", "WORKER_FAILURE_CODES",
        "worker_failure_reason", "Spill", "bound_text",
        "EVENT_TEXT_CHARS", "OUTPUT_TEXT_CHARS", "OUTPUT_TEXT_BYTES",
        "LAZY", "lazy_wake", "refire", "subject_now", "worker_gone", "wake_now", "flush_columns",
        "set_latest_turn", "items_unknown", "KnownItem", "assembled_output", "approval_position",
        "placed_open_attempts", "FAILURE_MESSAGE_CHARS",
    },
    "maia.service": {
        "command_of", "mutation_output", "not_found", "session_of_turn", "require_session",
        "filter_digest", "issue", "open_cursor", "peek_scope", "mirror_projects",
        "legacy_confirm_digest", "stored_replay", "readable_user_config", "read_snapshot",
        "snapshot_problem",
    },
    "maia.config": {"MAX_BYTES"},
}  # fmt: skip


def _handlers(name: str) -> bool:
    """The op handlers are reached through `HANDLERS`, by operation ID."""
    parts = name.split("_")
    return parts[0] in {
        "project", "session", "turn", "reference", "receipt", "events", "webhooks", "routine",
        "approval", "machine",
    }  # fmt: skip


@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_public_names_exported_once(package: str) -> None:
    """Each public top-level name of a private module is exported once, or listed internal."""
    folder = PACKAGES[package]
    exported = own_exports(folder)
    assert_once_and_resolving(package, exported)
    for path, name in public_definitions(private_modules(folder)):
        if name in INTERNAL[package] or name in exported:
            continue
        if package == "maia.service" and _handlers(name):
            continue
        raise AssertionError(f"{package}.{path.stem}.{name} is not exported")
