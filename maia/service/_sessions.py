"""session.create, list, show, wait, stop, archive, rename.

`session.create` is the creation transition of the new Session's own actor (no worker
yet: its first turn starts one). Changes of an existing Session go through its actor,
which holds the Session's revision; reads go straight to storage. `session.wait` re-reads
when the actor says the Session changed, and at least every 200 ms (the spec's reread).
"""

from __future__ import annotations

import os
from typing import Any

import orjson
import trio

from actors.session import (
    SESSION_COLUMNS,
    ArchiveSession,
    CreateSession,
    RenameSession,
    StopSession,
    list_session,
    session_from_row,
    session_view,
)
from maia.protocol import (
    MaiaError,
    SessionArchiveInput,
    SessionCreateInput,
    SessionListInput,
    SessionListOutput,
    SessionRef,
    SessionRenameInput,
    SessionResult,
    SessionShowOutput,
    SessionStopInput,
    SessionWaitInput,
    SessionWaitOutput,
    new_id,
    to_json,
)

from ._context import ServiceContext, command_of, mutation_output, not_found
from ._machines_placement import create_placed
from ._page_bytes import fitting, session_bytes
from ._paging import issue, open_cursor

REREAD_S = 0.2
SETTLED_MS = 300_000


def _start_dir(root: str, cwd: str | None) -> str:
    """The Session's start directory: the Project root, or a directory inside it."""
    if cwd is None:
        return root
    path = os.path.realpath(os.path.join(root, cwd))
    if os.path.commonpath([path, root]) != root or not os.path.isdir(path):
        raise MaiaError(
            "validation_failed",
            f"cwd: must be an existing directory inside the Project root {root}",
            {"path": "cwd"},
        )
    return path


async def session_executor(
    ctx: ServiceContext, project_id: str, requested: str | None, path: str = "executor"
) -> str:
    """The executor reference a new Session in `project_id` runs: `requested`, else the
    Project's admitted `defaults.executorRef`, else builtin:echo. Raises
    `configuration_invalid` (nothing defines it, or `allowedExecutors` does not list it,
    naming the executor and the allowed ones, and `details.path` the request's field when
    the request named it), `resource_not_found` (Project)."""
    effective = await ctx.admitted.of(project_id)
    try:
        ref, _ = effective.session_executor(requested)
    except MaiaError as refused:
        if refused.code == "configuration_invalid" and requested is not None:
            refused.details.setdefault("path", path)
        raise
    return ref


async def session_create(ctx: ServiceContext, params: SessionCreateInput) -> SessionResult:
    """Raises `resource_not_found` (Project), `configuration_invalid` (executor: not defined
    or not in the Project's allowedExecutors), `validation_failed` (cwd),
    `idempotency_conflict`."""
    executor = await session_executor(ctx, params.project_id, params.executor)
    command = command_of(params, ctx.actor_id, ctx.correlation_id)
    root = await ctx.read(
        lambda c: c.execute(
            "SELECT root FROM projects WHERE project_id = ?", (params.project_id,)
        ).fetchone()
    )
    if root is None:
        raise not_found("project", params.project_id)
    cwd = await trio.to_thread.run_sync(_start_dir, root[0], params.cwd)
    labels = orjson.dumps(dict.fromkeys(sorted(set(params.labels)), "")).decode()
    message = CreateSession(command, params.project_id, executor, cwd, params.title,
                            labels)  # fmt: skip
    result = await create_placed(
        ctx, params, lambda: ctx.sessions.create(new_id("session"), message)
    )  # issue 16
    return mutation_output(SessionResult, result)


def _list_sql(params: SessionListInput, now: int, after: int | None) -> tuple[str, list[Any]]:
    where: list[str] = []
    args: list[Any] = []
    if params.project_id is not None:
        where.append("s.project_id = ?")
        args.append(params.project_id)
    for label in params.labels:
        where.append("EXISTS (SELECT 1 FROM json_each(s.labels) WHERE key = ?)")
        args.append(label)
    if params.state:
        where.append(f"s.state IN ({', '.join('?' * len(params.state))})")
        args.extend(params.state)
    if not params.include_archived:
        where.append("s.archived = 0")
    resting = (
        "(s.activity = 'stopped' AND NOT EXISTS (SELECT 1 FROM turns t WHERE"
        " t.session_id = s.session_id AND t.seq >= s.unfinished_from"
        " AND t.state IN ('queued', 'dispatching', 'running')))"
    )
    settled = f"({resting} AND (s.state IN ('stopped', 'failed') OR s.updated_ms <= ?))"
    if params.settled is not None:
        where.append(settled if params.settled else f"NOT {settled}")
        args.append(now - SETTLED_MS)
    if params.idle_for_seconds is not None:
        where.append("s.activity != 'working' AND s.updated_ms <= ?")
        args.append(now - params.idle_for_seconds * 1000)
    if after is not None:
        where.append("s.rowid < ?")
        args.append(after)
    sql = f"SELECT s.rowid, {SESSION_COLUMNS} FROM sessions s"
    if where:
        sql += " WHERE " + " AND ".join(where)
    return sql + " ORDER BY s.rowid DESC LIMIT ?", [*args, params.limit + 1]


async def session_list(ctx: ServiceContext, params: SessionListInput) -> SessionListOutput:
    """Newest first. Raises `invalid_cursor`, `cursor_reset_required`."""
    filters = {k: v for k, v in to_json(params).items() if k not in ("cursor", "limit")}
    after = None
    if params.cursor is not None:
        after = open_cursor(ctx.store, params.cursor, "session.list", filters)
    now = ctx.now()
    sql, args = _list_sql(params, now, after)
    rows = await ctx.read(lambda c: c.execute(sql, args).fetchall())
    page = rows[: params.limit]
    sessions = tuple(list_session(session_from_row(r[1:], now)) for r in page)
    kept = fitting(sessions, session_bytes)  # the rest would pass the 1 MiB frame
    cursor = None
    if len(rows) > params.limit or kept < len(page):
        sessions, page = sessions[:kept], page[:kept]
        cursor = issue(ctx.store, page[-1][0], "session.list", filters)
    return SessionListOutput(sessions=sessions, next_cursor=cursor)


async def session_show(ctx: ServiceContext, params: SessionRef) -> SessionShowOutput:
    """Raises `resource_not_found`."""
    now = ctx.now()
    return SessionShowOutput(
        session=await ctx.read(lambda c: session_view(c, params.session_id, now))
    )


async def session_wait(ctx: ServiceContext, params: SessionWaitInput) -> SessionWaitOutput:
    """Raises `resource_not_found`."""
    deadline = trio.current_time() + params.wait_milliseconds / 1000
    notifier = ctx.sessions.notifier
    while True:
        changed = notifier.subscribe(params.session_id)  # before the read: no missed wake-up
        try:
            session = await ctx.read(lambda c: session_view(c, params.session_id, ctx.now()))
            if session.state in params.states or session.activity in params.activities:
                return SessionWaitOutput(method="session.wait", satisfied=True, session=session)
            left = deadline - trio.current_time()
            if left <= 0:
                return SessionWaitOutput(method="session.wait", satisfied=False, session=session)
            with trio.move_on_after(min(left, REREAD_S)):
                await changed.wait()
        finally:
            notifier.release(params.session_id, changed)


async def _exists(ctx: ServiceContext, session_id: str) -> None:
    found = await ctx.read(
        lambda c: c.execute("SELECT 1 FROM sessions WHERE session_id = ?", (session_id,)).fetchone()
    )
    if found is None:
        raise not_found("session", session_id)


async def session_stop(ctx: ServiceContext, params: SessionStopInput) -> SessionResult:
    """Raises `resource_not_found`, `revision_conflict`, `invalid_state` (already stopped)."""
    await _exists(ctx, params.session_id)
    message = StopSession(command_of(params, ctx.actor_id), params.expected_revision)
    return mutation_output(SessionResult, await ctx.sessions.ask(params.session_id, message))


async def session_archive(ctx: ServiceContext, params: SessionArchiveInput) -> SessionResult:
    """Raises `resource_not_found`, `revision_conflict`, `invalid_state` (still live)."""
    await _exists(ctx, params.session_id)
    message = ArchiveSession(
        command_of(params), params.expected_revision, params.summary, params.transcript_path
    )
    return mutation_output(SessionResult, await ctx.sessions.ask(params.session_id, message))


async def session_rename(ctx: ServiceContext, params: SessionRenameInput) -> SessionResult:
    """Raises `resource_not_found`, `revision_conflict`."""
    await _exists(ctx, params.session_id)
    message = RenameSession(command_of(params), params.title, params.expected_revision)
    return mutation_output(SessionResult, await ctx.sessions.ask(params.session_id, message))
