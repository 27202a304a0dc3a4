"""routine.* handlers (spec: Scheduled Session operations).

Every change goes to the routine's actor, which commits it in ONE storage write: the
preview's proof is spent (and deleted), the routine's core steps, and the rows, their
events, the receipt and the routine's durable timer commit together, or nothing does. The
expensive checks (cron parsing, a year of fires for the 15-minute rule) run before, off the
writer thread. A replay with the
same commandId returns the stored result; other values, a stale or spent proof and a stale
revision are `storage_conflict`.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final

import orjson
import trio

from actors import Command
from actors.routine import (
    HELD,
    ROUTINES,
    ChangeRoutine,
    CreateRoutine,
    Disable,
    FireRow,
    LauncherSlot,
    Pause,
    Resume,
    RoutineRow,
    Routines,
    RoutineState,
    Run,
    Schedule,
    Spend,
    get_routine,
    judge_run,
    list_routines,
    load_core,
    manual_fire_id,
    require_room,
    require_routine,
    routine_id_for,
    routine_show,
    routine_view,
)
from actors.session import FAILURE_MESSAGE_OF_TURN_ROW
from maia.core import MaiaError, digest_json, format_timestamp_ms
from maia.protocol import (
    FireFailure,
    NextFire,
    RoutineChangeInput,
    RoutineConfirmInput,
    RoutineCreateConfirmInput,
    RoutineCreatePreviewInput,
    RoutineCreatePreviewOutput,
    RoutineListInput,
    RoutineListOutput,
    RoutinePreviewOutput,
    RoutineRef,
    RoutineResult,
    RoutineRunResult,
    RoutineShowOutput,
    check,
    to_json,
)
from storage import (
    ExpectedTarget,
    MutationResult,
    Receipt,
    ReceiptTarget,
    issue_preview,
)

from ._context import ServiceContext, mutation_output, not_found
from ._kinds import running_kind
from ._page_bytes import fitting, routine_bytes
from ._paging import issue, open_cursor
from ._replay import legacy_confirm_digest, stored_replay
from ._routine_gate import SchedulerGate
from ._sessions import session_executor

PREVIEW_TTL_MS: Final = 120_000


def _digest(ctx: ServiceContext, params: Any, **extra: Any) -> str:
    """The preview's input digest: the actor, the commandId and the bound fields."""
    body = {k: v for k, v in to_json(params).items() if k not in ("inputDigest", "proof")}
    return digest_json({"actorId": ctx.actor_id, **body, **extra})


async def _checked_schedule(params: RoutineCreatePreviewInput | RoutineCreateConfirmInput,
                            now: int) -> Schedule:  # fmt: skip
    schedule = Schedule.parse(params.schedule.cron, params.schedule.timezone)
    await trio.to_thread.run_sync(schedule.check_interval, now)
    return schedule


async def _checked_executor(ctx: ServiceContext, template: Any) -> None:
    """The template's executor under the rule session.create applies, in the configuration
    admitted now (an admission between a preview and its confirm counts). Raises
    `configuration_invalid`, `resource_not_found` (Project)."""
    await session_executor(ctx, template.project_id, template.executor, "template.executor")


def _project_room(conn: sqlite3.Connection, project_id: str) -> None:
    """Raises `resource_not_found` (Project) and `routine_limit_reached` (20 live; judged
    again in the routine's insert, `RoutineActor`)."""
    if (
        conn.execute("SELECT 1 FROM projects WHERE project_id = ?", (project_id,)).fetchone()
        is None
    ):
        raise not_found("project", project_id)
    require_room(conn, project_id)


def _issue(ctx: ServiceContext, operation_id: str, digest: str, routine_id: str,
           revision: int | None) -> Any:  # fmt: skip
    return lambda conn: issue_preview(
        conn, actor_id=ctx.actor_id, operation_id=operation_id, input_digest=digest,
        targets=(ExpectedTarget("routine", routine_id, revision),), clock=ctx.clock,
        node_epoch=ctx.store.node_epoch, ttl_ms=PREVIEW_TTL_MS,
    )  # fmt: skip


async def _routines(ctx: ServiceContext) -> Routines:
    """The routine kind, opened on its first use (`_kinds`)."""
    return await running_kind(ctx.runtime, ROUTINES)


async def _ask(ctx: ServiceContext, routine_id: str, message: Any, *,
               confirm: bool = True) -> MutationResult:  # fmt: skip
    """Deliver a client command to the routine's actor; its stored result. A confirm's
    commandId reused with other values is `storage_conflict` (spec: "a replay with other
    values fails with storage_conflict"); pause and resume, which the spec gives no rule of
    their own, keep the generic `idempotency_conflict`."""
    try:
        committed = await (await _routines(ctx)).ask(routine_id, message)
    except MaiaError as error:
        if error.code == "idempotency_conflict" and confirm:
            raise MaiaError("storage_conflict", f"command {message.command.command_id} was "
                            "used with other values", error.details) from None  # fmt: skip
        raise
    result: MutationResult = committed.mutation
    return result


def _command(ctx: ServiceContext, operation_id: str, params: Any, digest: str) -> Command:
    """The idempotency key; a confirm's input is its preview's digest (which binds the actor,
    the commandId, the routine and every value), so a retried command replays its stored
    result whatever proof it carries, and other values under the commandId are
    storage_conflict (`_ask`)."""
    return Command(params.command_id, ctx.actor_id, digest, operation_id)


def _confirmed_before(ctx: ServiceContext, conn: sqlite3.Connection, operation_id: str,
                      params: Any, digest: str) -> bool:  # fmt: skip
    """Whether this commandId already confirmed these very values: its preview then issues a
    proof without judging the routine again (it moved since: created, fired, disabled), so
    the retried confirm answers the stored result (`duplicate`) and acts once."""
    return stored_replay(conn, actor_id=ctx.actor_id, operation_id=operation_id,
                         command_id=params.command_id, digests=(digest,),
                         same=_same_values(conn, operation_id, params)) is not None  # fmt: skip


def _same_values(conn: sqlite3.Connection, operation_id: str,
                 params: Any) -> Callable[[Receipt], bool]:  # fmt: skip
    """Whether a receipt (under any key form: the pre-0.13.0 one binds the proof, which a
    retry through a new preview does not carry) shows these very values, all the digest
    binds besides the actor and the commandId (the key):
      * a disable's target names the routine and the revision it moved from;
      * a create's result is the routine it made at revision 1: its name, schedule, template
        and state (paused or not);
      * a run's result names the routine of its fire; the revision it was confirmed at is the
        one the routine had then: the result revision of the routine's newest receipt before
        the run's (only receipted changes move a routine's revision; a run does not)."""

    def same(stored: Receipt) -> bool:
        first = stored.targets[0] if stored.targets else None
        result = stored.result if isinstance(stored.result, dict) else {}
        if operation_id == "routine.disable.confirm":
            return first is not None and (first.target_type, first.target_id,
                                          first.prior_revision) == (
                "routine", params.routine_id, params.expected_revision)  # fmt: skip
        if operation_id == "routine.create.confirm":
            made = result.get("routine")
            return isinstance(made, dict) and made.get("revision") == 1 and (
                made.get("routineId"), made.get("name"), made.get("schedule"),
                made.get("template"), made.get("state") == "paused",
            ) == (routine_id_for(stored.actor_id, params.command_id), params.name,
                  to_json(params.schedule), to_json(params.template), params.paused)  # fmt: skip
        if operation_id == "routine.run.confirm":
            fire = result.get("fire")
            if not isinstance(fire, dict) or fire.get("routineId") != params.routine_id:
                return False
            revision = _revision_before(conn, params.routine_id, stored.sequence)
            return revision is not None and revision == int(params.expected_revision)
        return False

    return same


def _revision_before(conn: sqlite3.Connection, routine_id: str, sequence: int) -> int | None:
    """The routine's revision when the receipt at `sequence` was written: the result revision
    of its newest receipt (create, pause, resume, disable: each names it first) before."""
    row = conn.execute(
        "SELECT targets FROM receipts WHERE target_id = ? AND sequence < ?"
        " ORDER BY sequence DESC LIMIT 1",
        (routine_id, sequence),
    ).fetchone()
    if row is None:
        return None
    targets = orjson.loads(row[0])
    first = ReceiptTarget.from_wire(targets[0]) if targets else None
    if first is None or (first.target_type, first.target_id) != ("routine", routine_id):
        return None
    return first.result_revision


async def _replayed(ctx: ServiceContext, operation_id: str, params: Any,
                    digest: str) -> MutationResult | None:  # fmt: skip
    """The stored result of a retried confirm (this key form or the pre-0.13.0 one), read
    before the confirm judges anything (`_replay`). None for other values than previewed:
    the confirm refuses them after its checks, as a first confirm."""
    if params.input_digest != digest:
        return None
    digests = (digest, legacy_confirm_digest(digest, params.proof))
    return await ctx.read(lambda conn: stored_replay(
        conn, actor_id=ctx.actor_id, operation_id=operation_id,
        command_id=params.command_id, digests=digests,
        same=_same_values(conn, operation_id, params),
    ))  # fmt: skip


def _same_digest(operation_id: str, params: Any, digest: str) -> Spend:
    if params.input_digest != digest:
        raise MaiaError(
            "storage_conflict",
            f"{operation_id}: inputDigest does not match these values; preview again",
            {"path": "inputDigest"},
        )
    return Spend(params.proof, digest)


async def routine_create_preview(
    ctx: ServiceContext, params: RoutineCreatePreviewInput
) -> RoutineCreatePreviewOutput:
    """Raises `routine_schedule_invalid`, `routine_interval_too_short`,
    `routine_limit_reached`, `configuration_invalid`, `resource_not_found`,
    `storage_conflict` (the routine this commandId names exists)."""
    now = ctx.now()
    routine_id = routine_id_for(ctx.actor_id, params.command_id)
    digest = _digest(ctx, params, routineId=routine_id)

    def judge(conn: sqlite3.Connection) -> None:
        if _confirmed_before(ctx, conn, "routine.create.confirm", params, digest):
            return
        if get_routine(conn, routine_id) is not None:
            raise MaiaError("storage_conflict", f"routine {routine_id} already exists",
                            {"routineId": routine_id})  # fmt: skip
        _project_room(conn, params.template.project_id)

    # A retry of a create this commandId confirmed is not judged again: an executor removed
    # by an admission since does not stop `maia routine create --command-id C --yes` twice.
    if await ctx.read(lambda c: _confirmed_before(ctx, c, "routine.create.confirm", params,
                                                  digest)):  # fmt: skip
        schedule = Schedule.parse(params.schedule.cron, params.schedule.timezone)
    else:
        schedule = await _checked_schedule(params, now)
        await _checked_executor(ctx, params.template)
        await ctx.read(judge)
    preview = await ctx.store.write(_issue(ctx, "routine.create.confirm", digest, routine_id, None))
    fires = tuple(NextFire(at=format_timestamp_ms(s.at_ms), local=s.local)
                  for s in schedule.next_fires(now, 3))  # fmt: skip
    return RoutineCreatePreviewOutput(
        routine_id=routine_id, next_fires=fires, input_digest=digest, proof=preview.proof,
        expires_at=format_timestamp_ms(preview.expires_ms),
    )  # fmt: skip


async def routine_create_confirm(
    ctx: ServiceContext, params: RoutineCreateConfirmInput
) -> RoutineResult:
    """Raises what the preview raises, and `storage_conflict` for a missing, spent, expired
    or other-value preview. A retry answers its stored result before any check."""
    routine_id = routine_id_for(ctx.actor_id, params.command_id)
    digest = _digest(ctx, params, routineId=routine_id)
    replayed = await _replayed(ctx, "routine.create.confirm", params, digest)
    if replayed is not None:
        return mutation_output(RoutineResult, replayed)
    schedule = await _checked_schedule(params, ctx.now())
    await _checked_executor(ctx, params.template)
    spend = _same_digest("routine.create.confirm", params, digest)
    try:
        await ctx.read(lambda conn: _project_room(conn, params.template.project_id))
    except MaiaError:
        # A retry overtaken by its own first confirm (in flight at the look-up above) meets
        # the place that confirm filled: the receipt it stored answers the retry.
        replayed = await _replayed(ctx, "routine.create.confirm", params, digest)
        if replayed is not None:
            return mutation_output(RoutineResult, replayed)
        raise
    now = ctx.now()
    state = RoutineState.PAUSED if params.paused else RoutineState.ACTIVE
    row = RoutineRow(routine_id, params.template.project_id, params.name, schedule.cron,
                     schedule.timezone, params.template.prompt, params.template.executor,
                     state, 1, None if params.paused else schedule.next_after(now),
                     ctx.actor_id, now, now)  # fmt: skip
    command = _command(ctx, "routine.create.confirm", params, digest)
    result = await _ask(ctx, routine_id, CreateRoutine(command, row, spend))
    return mutation_output(RoutineResult, result)


async def _change(ctx: ServiceContext, operation_id: str, params: RoutineChangeInput,
                  event: Pause | Resume) -> RoutineResult:  # fmt: skip
    digest = digest_json({k: v for k, v in to_json(params).items() if k != "commandId"})
    command = Command(params.command_id, ctx.actor_id, digest, operation_id)
    await ctx.read(lambda conn: require_routine(conn, params.routine_id))
    result = await _ask(ctx, params.routine_id, ChangeRoutine(command, event), confirm=False)
    return mutation_output(RoutineResult, result)


async def routine_pause(ctx: ServiceContext, params: RoutineChangeInput) -> RoutineResult:
    """Raises `resource_not_found`, `storage_conflict` (stale revision, not active),
    `idempotency_conflict`."""
    return await _change(ctx, "routine.pause", params, Pause(params.expected_revision))


async def routine_resume(ctx: ServiceContext, params: RoutineChangeInput) -> RoutineResult:
    """Raises `resource_not_found`, `storage_conflict` (stale revision, not paused),
    `idempotency_conflict`."""
    return await _change(ctx, "routine.resume", params, Resume(params.expected_revision))


async def _preview_change(ctx: ServiceContext, operation_id: str, params: RoutineChangeInput,
                          run: bool) -> RoutinePreviewOutput:  # fmt: skip
    digest = _digest(ctx, params)

    def judge(conn: sqlite3.Connection) -> RoutineRow:
        row, core = load_core(conn, params.routine_id)
        if _confirmed_before(ctx, conn, operation_id, params, digest):
            return row
        if run:  # a run judges the routine first: not active is routine_not_active
            judge_run(core, HELD)
        if row.state is RoutineState.DISABLED or row.revision != params.expected_revision:
            raise MaiaError(
                "storage_conflict",
                f"routine {row.routine_id} is {row.state.value} at revision {row.revision}",
                {"routineId": row.routine_id, "actual": row.revision,
                 "expected": params.expected_revision, "path": "expectedRevision"},
            )  # fmt: skip
        return row

    row = await ctx.read(judge)
    preview = await ctx.store.write(_issue(ctx, operation_id, digest, row.routine_id, row.revision))
    return RoutinePreviewOutput(
        routine_id=row.routine_id, name=row.name, input_digest=digest, proof=preview.proof,
        expires_at=format_timestamp_ms(preview.expires_ms),
    )  # fmt: skip


async def routine_disable_preview(
    ctx: ServiceContext, params: RoutineChangeInput
) -> RoutinePreviewOutput:
    """Raises `resource_not_found`, `storage_conflict` (disabled, or another revision)."""
    return await _preview_change(ctx, "routine.disable.confirm", params, run=False)


async def routine_disable_confirm(
    ctx: ServiceContext, params: RoutineConfirmInput
) -> RoutineResult:
    """Raises `resource_not_found`, `storage_conflict` (proof, revision, other values)."""
    digest = _digest(ctx, params)
    replayed = await _replayed(ctx, "routine.disable.confirm", params, digest)
    if replayed is not None:
        return mutation_output(RoutineResult, replayed)
    spend = _same_digest("routine.disable.confirm", params, digest)
    await ctx.read(lambda conn: require_routine(conn, params.routine_id))
    command = _command(ctx, "routine.disable.confirm", params, digest)
    event = Disable(params.expected_revision)
    result = await _ask(ctx, params.routine_id, ChangeRoutine(command, event, spend))
    return mutation_output(RoutineResult, result)


async def routine_run_preview(
    ctx: ServiceContext, params: RoutineChangeInput
) -> RoutinePreviewOutput:
    """Raises `resource_not_found`, `storage_conflict`, `routine_not_active`, `held`,
    `routine_busy` (retryable: the previous fire's first turn is unsettled)."""
    return await _preview_change(ctx, "routine.run.confirm", params, run=True)


async def routine_run_confirm(ctx: ServiceContext, params: RoutineConfirmInput) -> RoutineRunResult:
    """Raises what the preview raises, and `storage_conflict` for the proof or revision."""
    digest = _digest(ctx, params)
    replayed = await _replayed(ctx, "routine.run.confirm", params, digest)
    if replayed is not None:
        return mutation_output(RoutineRunResult, replayed)
    spend = _same_digest("routine.run.confirm", params, digest)
    await ctx.read(lambda conn: require_routine(conn, params.routine_id))
    command = _command(ctx, "routine.run.confirm", params, digest)
    fire_id = manual_fire_id(ctx.actor_id, params.command_id)
    event = Run(fire_id, params.expected_revision, held=HELD)
    result = await _ask(ctx, params.routine_id, ChangeRoutine(command, event, spend))
    return mutation_output(RoutineRunResult, result)


# A fire's runtime failure, for every fire of a routine.show page in one read: its first
# turn's first error item (the worker's own account, cut as turn.show cuts it), read only for
# a failed turn; and for a fire whose Session failed before any turn, the Session's state and
# failure message (session.show's). The turn's message is the Session actor's
# (`FAILURE_MESSAGE_OF_TURN_ROW`: its items' layout and turn.show's cut are its own);
# `{marks}` is filled per page.
_FAILURES_SQL: Final = (
    "SELECT f.fire_id,"
    f" CASE WHEN t.state = 'failed' THEN {FAILURE_MESSAGE_OF_TURN_ROW} END,"
    " s.state, s.failure_message"
    " FROM routine_fires f LEFT JOIN turns t ON t.turn_id = f.turn_id"
    " LEFT JOIN sessions s ON s.session_id = f.session_id AND f.turn_id IS NULL"
    " WHERE f.fire_id IN ({marks})"
)


def _fire_failures(conn: sqlite3.Connection,
                   fires: Sequence[tuple[FireRow, str | None, str | None]],
                   ) -> list[FireFailure | None]:  # fmt: skip
    """Each fire's failure as turn.show carries it (its first turn failed: the worker's own
    message), or as session.show does (its Session failed before any turn), else None; one
    query for the page, none when no fire failed or lost its Session."""
    wanted = [fire.fire_id for fire, state, reason in fires
              if (state == "failed" and fire.turn_id is not None and reason is not None)
              or (fire.turn_id is None and fire.session_id is not None)]  # fmt: skip
    found: dict[str, tuple[str | None, str | None, str | None]] = {}
    if wanted:
        sql = _FAILURES_SQL.format(marks=", ".join("?" * len(wanted)))
        found = {r[0]: (r[1], r[2], r[3]) for r in conn.execute(sql, wanted)}
    failures: list[FireFailure | None] = []
    for fire, _, reason in fires:
        error, session_state, session_failure = found.get(fire.fire_id, (None, None, None))
        if fire.turn_id is not None:
            failures.append(FireFailure(code=reason, message=error)
                            if error is not None and reason is not None else None)  # fmt: skip
        elif session_state == "failed" and session_failure is not None:
            failures.append(FireFailure(code="session_failed", message=session_failure))
        else:
            failures.append(None)
    return failures


async def routine_show_handler(ctx: ServiceContext, params: RoutineRef) -> RoutineShowOutput:
    """Raises `resource_not_found`."""
    shown = await ctx.read(lambda conn: routine_show(conn, params.routine_id, _fire_failures))
    return check(RoutineShowOutput, shown, root="result")


async def routine_list(ctx: ServiceContext, params: RoutineListInput) -> RoutineListOutput:
    """Creation order. Raises `invalid_cursor`."""
    filters = {k: v for k, v in to_json(params).items() if k not in ("cursor", "limit")}
    after = None if params.cursor is None else open_cursor(ctx.store, params.cursor,
                                                           "routine.list", filters)  # fmt: skip
    rows = await ctx.read(lambda conn: list_routines(
        conn, project_id=params.project_id, states=params.state, after=after,
        limit=params.limit + 1,
    ))  # fmt: skip
    page = rows[: params.limit]
    routines = tuple(routine_view(r) for _, r in page)
    kept = fitting(routines, routine_bytes)  # the rest would pass the 1 MiB frame
    cursor = None
    if len(rows) > len(page) or kept < len(page):
        routines, page = routines[:kept], page[:kept]
        cursor = issue(ctx.store, page[-1][0], "routine.list", filters)
    return RoutineListOutput(routines=routines, next_cursor=cursor)


ROUTINE_HANDLERS: Final[dict[str, Callable[[ServiceContext, Any], Awaitable[Any]]]] = {
    "routine.create.preview": routine_create_preview,
    "routine.create.confirm": routine_create_confirm,
    "routine.pause": routine_pause,
    "routine.resume": routine_resume,
    "routine.disable.preview": routine_disable_preview,
    "routine.disable.confirm": routine_disable_confirm,
    "routine.run.preview": routine_run_preview,
    "routine.run.confirm": routine_run_confirm,
    "routine.show": routine_show_handler,
    "routine.list": routine_list,
}


def install_launcher(ctx: ServiceContext) -> None:
    """Give the routine scheduler its launcher (the gate acting as each routine's scheduler)
    and maxPendingRoutineTicks as admitted: a Project's effective value (the smaller of the
    user's and the Project's), or for None the user's (the Node's)."""
    if ROUTINES in ctx.runtime:
        slot = ctx.runtime.extension(LauncherSlot)
        slot.launcher = SchedulerGate(ctx)

        async def pending_limit(project_id: str | None) -> int:
            config = await ctx.admitted.of(project_id)
            return config.limits.max_pending_routine_ticks

        slot.pending_limit = pending_limit
