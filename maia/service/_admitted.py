"""The admitted configuration the running Node works under, kept in memory between admissions.

Every turn the Session side dispatches asks which limits apply, so reading and parsing the
snapshots from storage on each ask would cost a read per turn. The Node is the only writer
of its configuration snapshots (`config.admit.confirm` runs in this process), so a cache
that the confirm clears is exact: after an admission commits, the next ask reads the new
snapshot, and new work runs under it without a restart. Editing a file changes nothing
here: only an admission does.

`files` is node.status's view of the configuration files (`config_files_status`), kept
while no file's `stat` changed, so that polling node.status does not re-read and re-parse
every file each time. Taking the fingerprint costs a storage read and an `lstat` per file
(two thread hops), so a fingerprint younger than `FILES_FRESH_MS` is reused without one,
and callers that find it older share one check in flight instead of queueing for their own:
an edit to a file, or a Project added, shows in node.status within `FILES_FRESH_MS`; an
admission shows at once (it drops what was kept).
"""

from __future__ import annotations

import logging
import os
import sqlite3
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, Final

import attrs
import trio

from maia.config import (
    EffectiveConfig,
    ProjectConfig,
    UserConfig,
    parse_project_config,
    parse_user_config,
    project_candidate,
)
from maia.core import MaiaError
from maia.protocol import ConfigScopeStatus
from storage import USER_SCOPE, ConfigSnapshot, Storage, admitted_snapshot, scope_revision

_log = logging.getLogger("maia.config")

MAX_CACHED: Final = 1024  # Projects whose effective configuration is kept
MAX_FINGERPRINTED: Final = 256  # as many Projects as config_files_status reads
FILES_FRESH_MS: Final = 250  # how old a files fingerprint node.status may answer from
Fingerprint = tuple[tuple[str, int, int, int, int] | None, ...]


def _stat(path: str) -> tuple[str, int, int, int, int] | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return (path, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


async def files_fingerprint(store: Storage, home: Path) -> Fingerprint:
    """What each configuration file's `lstat` says now (None: absent): the user file,
    then each Project's, in the order they were added. Blocking calls run in a thread."""
    rows = await store.read(
        lambda c: c.execute(
            "SELECT root FROM projects ORDER BY rowid LIMIT ?", (MAX_FINGERPRINTED,)
        ).fetchall()
    )
    paths = [
        str(home / "config.jsonc"),
        *(os.path.join(r[0], ".maia", "config.jsonc") for r in rows),
    ]
    return await trio.to_thread.run_sync(lambda: tuple(_stat(p) for p in paths))


def read_snapshot(conn: sqlite3.Connection, scope: str) -> ConfigSnapshot | None:
    """`admitted_snapshot`, except that a stored manifest that is not JSON (a corrupted
    row) reads as `manifest=None` instead of failing every reader of the scope:
    `snapshot_problem` names it, and an admission replaces it."""
    return admitted_snapshot(conn, scope, lenient=True)


def _document_of(snapshot: ConfigSnapshot) -> tuple[Any, str | None]:
    """The snapshot's admitted document, or why there is none to read."""
    if snapshot.manifest is None:
        return None, "its stored manifest is not JSON"
    if not isinstance(snapshot.manifest, dict) or "document" not in snapshot.manifest:
        return None, "its stored manifest has no document"
    return snapshot.manifest["document"], None


def user_of(snapshot: ConfigSnapshot | None, started_with: UserConfig) -> UserConfig:
    if snapshot is None:
        return started_with  # nothing admitted yet: what the Node read when it started
    readable = readable_user_config(snapshot)
    return started_with if readable is None else readable


def _user_config(snapshot: ConfigSnapshot) -> tuple[UserConfig | None, str | None]:
    document, why = _document_of(snapshot)
    if why is not None:
        return None, why
    try:
        return parse_user_config(document, "admitted user configuration"), None
    except MaiaError as error:
        if error.code != "configuration_invalid":
            raise
        return None, error.message


def readable_user_config(snapshot: ConfigSnapshot) -> UserConfig | None:
    """The admitted user configuration, or None (logged) for one this build refuses.

    A document admitted by an earlier Maia may hold what this one's admission refuses (an echo
    executor with `model`, say). Refusing to start on it would leave a home no one can mend,
    as admitting a fix needs a running Node: such a snapshot counts as never admitted, so the
    Node runs on `config.jsonc` (checked as at any start) until the next admission."""
    config, why = _user_config(snapshot)
    if why is not None:
        _log.warning("the admitted user configuration (revision %d) does not pass this Maia's "
                     "checks, so the Node runs on config.jsonc until the next admission: %s",
                     snapshot.revision, why)  # fmt: skip
    return config


def _project_config(
    snapshot: ConfigSnapshot, project_id: str
) -> tuple[ProjectConfig | None, str | None]:
    document, why = _document_of(snapshot)
    if why is not None:
        return None, why
    if document is None:
        return None, None  # an absent file was admitted: no Project settings
    try:
        config = parse_project_config(
            document, "admitted Project configuration", project_id=project_id
        )
    except MaiaError as error:
        if error.code != "configuration_invalid":
            raise
        return None, error.message
    return config, None


def snapshot_problem(snapshot: ConfigSnapshot | None, project_id: str | None) -> str | None:
    """Why this build cannot work under the admitted snapshot (None: it can, or there is
    none): its stored manifest is not JSON, or its document does not pass this Maia's
    checks (admitted by another version, or corrupted)."""
    if snapshot is None:
        return None
    if project_id is None:
        return _user_config(snapshot)[1]
    return _project_config(snapshot, project_id)[1]


def project_of(snapshot: ConfigSnapshot | None, project_id: str) -> ProjectConfig | None:
    """The admitted Project configuration (None: none admitted, or one this build cannot
    read: the caller falls back, see `AdmittedConfigs.of`)."""
    return None if snapshot is None else _project_config(snapshot, project_id)[0]


@attrs.frozen
class _Unreadable:
    """A Project whose admitted snapshot this build cannot read: where its file is."""

    root: str
    project_key: str
    revision: int
    why: str


def _read_effective(
    conn: sqlite3.Connection, project_id: str | None, started_with: UserConfig
) -> tuple[EffectiveConfig, _Unreadable | None]:
    project: ConfigSnapshot | None = None
    unreadable: _Unreadable | None = None
    config: ProjectConfig | None = None
    if project_id is not None:
        scope_revision(conn, project_id)  # raises resource_not_found for an unknown one
        project = read_snapshot(conn, project_id)
        if project is not None:
            config, why = _project_config(project, project_id)
            if why is not None:
                root, key = conn.execute(
                    "SELECT root, project_key FROM projects WHERE project_id = ?", (project_id,)
                ).fetchone()
                unreadable = _Unreadable(str(root), str(key), project.revision, why)
                project = None  # not in effect: the activation records no snapshot
    user = read_snapshot(conn, USER_SCOPE)
    effective = EffectiveConfig(
        user_of(user, started_with),
        config,
        project_id,
        user_snapshot_id=user.snapshot_id if user is not None else None,
        project_snapshot_id=project.snapshot_id if project is not None else None,
    )
    return effective, unreadable


def read_effective(
    conn: sqlite3.Connection, project_id: str | None, started_with: UserConfig
) -> EffectiveConfig:
    """The admitted configuration of work in `project_id` (None: outside a Project), read
    in one transaction; a Project snapshot this build cannot read gives no Project settings
    (`AdmittedConfigs.of` reads the Project's file instead). Raises `resource_not_found`
    for an unknown Project."""
    return _read_effective(conn, project_id, started_with)[0]


def _on_file(effective: EffectiveConfig, unreadable: _Unreadable) -> EffectiveConfig:
    """`effective` with the Project's settings read from its file (none if the file has
    problems too), logged. Blocking: reads the file."""
    user = effective.user
    candidate = project_candidate(
        unreadable.root, effective.project_id, unreadable.project_key,
        user.capacity.currency, user.executor_refs(),
    )  # fmt: skip
    what = "its file" if not candidate.problems else "defaults (its file has problems too)"
    _log.warning("the admitted configuration of Project %s (revision %d) cannot be read by this "
                 "Maia, so the Project runs on %s until the next admission (maia config admit "
                 "--project-id %s): %s", effective.project_id, unreadable.revision, what,
                 unreadable.project_key, unreadable.why)  # fmt: skip
    return attrs.evolve(effective, project=None if candidate.problems else candidate.project)


@attrs.frozen
class _FilesCheck:
    """One check of the configuration files: what `lstat` said, the answer it gave, and
    when it began (monotonic ms; the answer is at least this fresh)."""

    fingerprint: Fingerprint
    value: list[ConfigScopeStatus]
    began_ms: int


@attrs.define(eq=False)
class AdmittedConfigs:
    """The effective configuration per Project, as admitted (see the module)."""

    store: Storage
    started_with: UserConfig  # what the Node started on (used while nothing is admitted)
    _cache: dict[str | None, EffectiveConfig] = attrs.field(factory=dict, init=False)
    _generation: int = attrs.field(default=0, init=False)
    _files: _FilesCheck | None = attrs.field(default=None, init=False)
    _files_in_flight: trio.Event | None = attrs.field(default=None, init=False)

    async def of(self, project_id: str | None) -> EffectiveConfig:
        """The effective configuration of `project_id`'s work. Raises `resource_not_found`."""
        found = self._cache.get(project_id)
        if found is not None:
            return found
        generation = self._generation
        started = self.started_with
        value, unreadable = await self.store.read(lambda c: _read_effective(c, project_id, started))
        if unreadable is not None:
            value = await trio.to_thread.run_sync(_on_file, value, unreadable)
        if generation == self._generation:  # no admission meanwhile: it is still current
            if len(self._cache) >= MAX_CACHED:
                self._cache.clear()
            self._cache[project_id] = value
        return value

    def admitted(self) -> None:
        """An admission committed: forget everything read before it."""
        self._generation += 1
        self._cache.clear()
        self._files = None

    def fresh_files(
        self, now_ms: int, fresh_ms: int = FILES_FRESH_MS
    ) -> list[ConfigScopeStatus] | None:
        """`files`' answer when it needs no new check (one at most `fresh_ms` old), else None."""
        known = self._files
        if known is not None and 0 <= now_ms - known.began_ms < fresh_ms:
            return known.value
        return None

    async def files(
        self,
        home: Path,
        read: Callable[[], Awaitable[list[ConfigScopeStatus]]],
        now_ms: int,
        fresh_ms: int = FILES_FRESH_MS,
    ) -> list[ConfigScopeStatus]:
        """`read()`'s answer as of at most `fresh_ms` before `now_ms` (monotonic). Older, the
        files' fingerprint is taken again (one check at a time, shared by every caller that
        arrives meanwhile), and `read()` runs again only when a file's `stat` changed, a
        Project was added or an admission committed since."""
        while True:
            found = self.fresh_files(now_ms, fresh_ms)
            if found is not None:
                return found
            in_flight = self._files_in_flight
            if in_flight is None:
                return await self._check(home, read, now_ms)
            await in_flight.wait()  # share its answer; if it failed, check ourselves

    async def _check(
        self, home: Path, read: Callable[[], Awaitable[list[ConfigScopeStatus]]], now_ms: int
    ) -> list[ConfigScopeStatus]:
        self._files_in_flight = done = trio.Event()
        try:
            generation = self._generation
            fingerprint = await files_fingerprint(self.store, home)
            known = self._files
            if known is not None and known.fingerprint == fingerprint:
                value = known.value
            else:
                value = await read()
            if generation == self._generation:  # no admission meanwhile
                self._files = _FilesCheck(fingerprint, value, now_ms)
            return value
        finally:
            self._files_in_flight = None
            done.set()
