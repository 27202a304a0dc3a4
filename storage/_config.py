"""Admitted configuration snapshots: what each scope (the user's, or one Project's) runs on.

An admission writes, in the caller's transaction (inside `run_mutation`, so with its
receipt): the snapshot row, the scope's new revision, the Project's revision (project
scope), and a `config.admitted` event. The revision a preview was judged against is
compared here, so a stale preview cannot commit. Call these inside `Storage.write` (admit)
or `Storage.read` (the rest).
"""

from __future__ import annotations

import sqlite3
from typing import Any, Final

import attrs
import orjson

from maia.core import MaiaError

from ._cas import compare_and_set, read_revision
from ._events import EventRecord, append_event
from ._ids import new_ordered_id

USER_SCOPE: Final = "user"
USER_OWNER_ID: Final = "config_user"
MAX_EVENT_PATHS: Final = 100


@attrs.frozen
class ConfigSnapshot:
    """One admitted configuration."""

    snapshot_id: str
    scope: str
    revision: int
    manifest: Any
    manifest_digest: str
    source_digest: str
    actor_id: str
    admitted_ms: int


_COLUMNS: Final = (
    "snapshot_id, scope, revision, manifest, manifest_digest, source_digest, actor_id, admitted_ms"
)


def _snapshot(row: Any, *, lenient: bool = False) -> ConfigSnapshot:
    try:
        manifest = orjson.loads(row[3])
    except (ValueError, TypeError):  # orjson's decode error is a ValueError
        if not lenient:
            raise
        manifest = None
    return ConfigSnapshot(row[0], row[1], row[2], manifest, *row[4:])


def admitted_snapshot(
    conn: sqlite3.Connection, scope: str, *, lenient: bool = False
) -> ConfigSnapshot | None:
    """The snapshot admitted now for `scope` ('user' or a project ID), or None. `lenient`:
    a stored manifest that is not JSON (a corrupted row) reads as `manifest=None` instead of
    raising."""
    row = conn.execute(
        f"SELECT {', '.join('s.' + c.strip() for c in _COLUMNS.split(','))}"
        " FROM config_admitted a JOIN config_snapshots s ON s.snapshot_id = a.snapshot_id"
        " WHERE a.scope = ?",
        (scope,),
    ).fetchone()
    return None if row is None else _snapshot(row, lenient=lenient)


def scope_revision(conn: sqlite3.Connection, scope: str) -> int:
    """The revision an admission to `scope` is judged against: the Project's revision for a
    project scope (raises `resource_not_found`), the count of user admissions for 'user'."""
    if scope != USER_SCOPE:
        revision = read_revision(conn, "projects", scope)
        if revision is None:
            raise MaiaError(
                "resource_not_found", f"project {scope} does not exist",
                {"resource": "project", "id": scope},
            )  # fmt: skip
        return revision
    row = conn.execute("SELECT revision FROM config_admitted WHERE scope = ?", (scope,))
    found = row.fetchone()
    return 0 if found is None else int(found[0])


def admit_snapshot(
    conn: sqlite3.Connection,
    *,
    scope: str,
    expected_revision: int,
    manifest: Any,
    manifest_digest: str,
    source_digest: str,
    changed_paths: list[str],
    actor_id: str,
    now_ms: int,
) -> tuple[ConfigSnapshot, EventRecord]:
    """Admit `manifest` for `scope` if the scope is still at `expected_revision`.

    Raises `revision_conflict` (a stale preview: something else was admitted, or the
    Project changed, since), `resource_not_found` for an unknown Project.
    """
    if scope == USER_SCOPE:
        actual = scope_revision(conn, scope)
        if actual != expected_revision:
            raise MaiaError(
                "revision_conflict",
                f"the user configuration is at revision {actual}, not {expected_revision}",
                {"resource": "user_config", "id": scope, "expected": expected_revision,
                 "actual": actual},
            )  # fmt: skip
        revision = expected_revision + 1
    else:
        revision = compare_and_set(conn, "projects", scope, expected_revision=expected_revision,
                                   changes={}, now_ms=now_ms)  # fmt: skip
    snapshot = ConfigSnapshot(
        new_ordered_id("snapshot"), scope, revision, manifest, manifest_digest, source_digest,
        actor_id, now_ms,
    )  # fmt: skip
    conn.execute(
        f"INSERT INTO config_snapshots ({_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (snapshot.snapshot_id, scope, revision, orjson.dumps(manifest).decode(),
         manifest_digest, source_digest, actor_id, now_ms),
    )  # fmt: skip
    conn.execute(
        "INSERT INTO config_admitted (scope, snapshot_id, revision) VALUES (?, ?, ?)"
        " ON CONFLICT (scope) DO UPDATE SET snapshot_id = excluded.snapshot_id,"
        " revision = excluded.revision",
        (scope, snapshot.snapshot_id, revision),
    )
    project_id = None if scope == USER_SCOPE else scope
    event = append_event(
        conn,
        owner_id=USER_OWNER_ID if project_id is None else project_id,
        owner_type="user_config" if project_id is None else "project",
        event_type="config.admitted",
        payload={
            "scope": "user" if project_id is None else "project",
            "snapshotId": snapshot.snapshot_id,
            "revision": revision,
            "manifestDigest": manifest_digest,
            "changedPaths": changed_paths[:MAX_EVENT_PATHS],
            "changes": len(changed_paths),
        },
        now_ms=now_ms,
        aggregate_revision=revision,
        project_id=project_id,
        actor_id=actor_id,
    )
    return snapshot, event
