"""turn.send, wait, show, list, queue.list, cancel, interrupt (spec: Turn queue operations).

Sends, cancels and interrupts go to the Session's actor (it owns the queue); the reads go
to storage. `turn.wait` answers as soon as the turn reaches a wanted state, woken by the
actor's commit, and never waits more than 4 s in one call. `turn.send` with
`waitMilliseconds` is a send and that same wait in one call (a client's whole `send --wait`
for a short turn is its hello and this request); once the turn ended, the answer carries its
items as `turn.show`'s first page does: the page the Session actor built in the commit that
ended the turn, published with its snapshot (nothing is read), else the snapshot's items.
"""

from __future__ import annotations

import sqlite3

import attrs
import trio

from actors.session import (
    TURN_COLUMNS,
    CancelTurn,
    InterruptTurn,
    SendTurn,
    TurnState,
    input_preview,
    turn_from_row,
    turn_view,
)
from maia.protocol import (
    MAX_SESSION_PENDING_TURNS,
    MaiaError,
    QueueEntry,
    QueueWait,
    SessionRefInput,
    Turn,
    TurnCancelInput,
    TurnInterruptInput,
    TurnListInput,
    TurnListOutput,
    TurnQueueListOutput,
    TurnResult,
    TurnSendInput,
    TurnSendOutput,
    TurnShowInput,
    TurnShowOutput,
    TurnWaitInput,
    TurnWaitOutput,
    format_timestamp_ms,
)

from ._context import (
    ServiceContext,
    command_of,
    mutation_output,
    project_of_session,
    require_session,
    session_of_turn,
)
from ._paging import issue, open_cursor
from ._turn_items import items_page, show_page

TERMINAL = ("completed", "failed", "interrupted")
DISPATCH_WAIT_S = 3.0
START_GRACE_S = 0.5  # past the wait, for a start read before the fence to reach the actor
REREAD_S = 0.2
# While the Session's committed snapshot of the turn is held, a reread reads that snapshot
# again, which only a commit changes, and every commit that changes it notifies after
# publishing it: the reread then guards only a snapshot dropped meanwhile (the notifier keeps
# the most recent 8,192), so it may be rarer. At 200 ms, 200 turns in flight at ~250 ms each
# woke every waiter about once per turn for nothing (a deadline expired, a cancel delivered).
REREAD_HELD_S = 1.0


async def turn_send(ctx: ServiceContext, params: TurnSendInput) -> TurnSendOutput:
    """Raises `resource_not_found`, `invalid_state` (stopped), `turn_queue_full`,
    `saturated` (no worker slot: retry), `idempotency_conflict`.

    With `waitMilliseconds` it then waits, from when the call began, for the turn to end
    (a retried commandId waits for the same turn). The wait is no part of the command:
    its digest is the send's alone, so a retry with another wait is a duplicate.
    """
    began = trio.current_time()
    command = command_of(params, ctx.actor_id, ctx.correlation_id, outside=("waitMilliseconds",))
    result = await ctx.sessions.send(params.session_id, SendTurn(command, params.text))
    if params.wait_milliseconds is None:
        return mutation_output(TurnSendOutput, result)
    # The answer's turn is the one the wait ends with: the stored result (the Node's own
    # JSON) gives its ID and place, decoded whole only when the wait ends before the turn.
    turn_id, position = result.result["turn"]["turnId"], result.result["position"]
    deadline = began + params.wait_milliseconds / 1000
    ended, turn = await _await_states(ctx, turn_id, TERMINAL, deadline, page=True)
    if not ended:
        return attrs.evolve(mutation_output(TurnSendOutput, result), turn=turn)
    notifier = ctx.sessions.notifier
    held = notifier.turn(turn.turn_id)
    built = notifier.take_page(turn.turn_id)  # the page published with that snapshot
    if held is not None and held.state in TERMINAL:
        if built is None or built.prompt != params.text:
            # The committed snapshot is the turn as turn.show would read it, and the prompt
            # is this send's text (a retry's is the same: same digest): only items are read.
            built = await ctx.read(lambda c: items_page(c, held, params.text, 0))
        page = _with_cursor(ctx, built)
    else:
        page = await turn_show(ctx, TurnShowInput(turn_id=turn.turn_id))
    # Built directly, not by attrs.evolve: every field is named here.
    return TurnSendOutput(delivery=result.delivery, receipt_id=result.receipt.receipt_id,
                          turn=page.turn, position=position, items=page.items,
                          items_truncated=page.items_truncated,
                          next_item_cursor=page.next_item_cursor)  # fmt: skip


async def _await_states(
    ctx: ServiceContext,
    turn_id: str,
    wanted: tuple[str, ...],
    deadline: float,
    *,
    page: bool = False,
) -> tuple[bool, Turn]:
    """(reached, the turn now): woken by the actor's commits, rereading at most every
    `REREAD_S` (`REREAD_HELD_S` while its snapshot is held), until the turn is in `wanted`
    or `deadline` (trio time) passes."""
    notifier = ctx.sessions.notifier
    while True:
        # Before the read: no missed wake-up; woken only by a snapshot in `wanted`.
        changed = notifier.subscribe(turn_id, wanted, page=page)
        try:
            turn = notifier.turn(turn_id)
            reread = REREAD_HELD_S
            if turn is None:
                turn = await ctx.read(lambda c: turn_view(c, turn_id))
                reread = REREAD_S
            if turn.state in wanted:
                return True, turn
            now = trio.current_time()
            if deadline <= now:
                return False, turn
            # The bound kept by the run's ask timer, not a cancel scope (`Wakeup.wait_until`).
            await changed.wait_until(min(deadline, now + reread))
        finally:
            notifier.release(turn_id, changed)


async def turn_wait(ctx: ServiceContext, params: TurnWaitInput) -> TurnWaitOutput:
    """Raises `resource_not_found`."""
    deadline = trio.current_time() + params.wait_milliseconds / 1000
    wanted = params.states or TERMINAL
    satisfied, turn = await _await_states(ctx, params.turn_id, wanted, deadline)
    return TurnWaitOutput(method="turn.wait", satisfied=satisfied, turn=turn)


def _list(
    conn: sqlite3.Connection, session_id: str, before: int | None, limit: int
) -> list[tuple[object, ...]]:
    require_session(conn, session_id)
    # The (session_id, seq) unique index serves this page without a sort.
    rows = conn.execute(
        f"SELECT seq, {TURN_COLUMNS} FROM turns WHERE session_id = ? AND seq < ?"
        " ORDER BY seq DESC LIMIT ?",
        (session_id, before if before is not None else 2**62, limit + 1),
    ).fetchall()
    return [tuple(r) for r in rows]


async def turn_list(ctx: ServiceContext, params: TurnListInput) -> TurnListOutput:
    """Newest first, without output text (bounded pages: `turn.show` has the rest).
    Raises `resource_not_found`, `invalid_cursor`, `cursor_reset_required`."""
    filters = {"sessionId": params.session_id}
    before = None
    if params.cursor is not None:
        before = open_cursor(ctx.store, params.cursor, "turn.list", filters)
    rows = await ctx.read(lambda c: _list(c, params.session_id, before, params.limit))
    page = rows[: params.limit]
    cursor = None
    if len(rows) > params.limit:
        cursor = issue(ctx.store, int(page[-1][0]), "turn.list", filters)  # type: ignore[call-overload]
    return TurnListOutput(turns=tuple(turn_from_row(r[1:], None) for r in page),
                          next_cursor=cursor)  # fmt: skip


async def turn_show(ctx: ServiceContext, params: TurnShowInput) -> TurnShowOutput:
    """A page of the turn's items (after `itemCursor`), under the frame bound; when more
    follow, `nextItemCursor` continues. Raises `resource_not_found`, `invalid_cursor`,
    `cursor_reset_required`."""
    filters = {"turnId": params.turn_id}
    after = 0
    if params.item_cursor is not None:
        after = open_cursor(ctx.store, params.item_cursor, "turn.show", filters)
    page = await ctx.read(lambda c: show_page(c, params.turn_id, after))
    return _with_cursor(ctx, page)


def _with_cursor(ctx: ServiceContext, page: TurnShowOutput) -> TurnShowOutput:
    """`page` with the cursor to the items after it, when more follow."""
    if not page.items_truncated or not page.items:
        return page
    filters = {"turnId": page.turn.turn_id}
    cursor = issue(ctx.store, page.items[-1].sequence, "turn.show", filters)
    return attrs.evolve(page, next_item_cursor=cursor)


def _queue(conn: sqlite3.Connection, session_id: str, limit: int) -> TurnQueueListOutput:
    require_session(conn, session_id)
    rows = conn.execute(
        f"SELECT {TURN_COLUMNS} FROM turns WHERE session_id = ?"
        " AND seq >= (SELECT unfinished_from FROM sessions WHERE session_id = ?)"
        " AND state IN ('queued', 'dispatching', 'running') ORDER BY seq",
        (session_id, session_id),
    ).fetchall()
    active = [r for r in rows if r[2] != "queued"]
    queued = [r for r in rows if r[2] == "queued"]
    offset = 1 if active else 0

    def entry(row: tuple[object, ...], position: int) -> QueueEntry:
        turn_id, _, state, revision, created, text = row[:6]
        return QueueEntry(
            turn_id=str(turn_id), state=state, position=position,  # type: ignore[arg-type]
            revision=int(revision),  # type: ignore[call-overload]
            input_preview=input_preview(str(text)),
            created_at=format_timestamp_ms(int(created)),  # type: ignore[call-overload]
        )  # fmt: skip

    return TurnQueueListOutput(
        session_id=session_id,
        active_turn=entry(active[0], 0) if active else None,
        queue=tuple(entry(r, offset + i) for i, r in enumerate(queued)),
        limit=limit,
    )


async def turn_queue_list(ctx: ServiceContext, params: SessionRefInput) -> TurnQueueListOutput:
    """The queue, its limit (maxQueuedMessages as admitted now) and, when its first turn
    waits for a capacity limit, which. Raises `resource_not_found`."""
    project = await ctx.read(lambda c: project_of_session(c, params.session_id))
    limits = (await ctx.admitted.of(project)).limits
    limit = min(limits.max_queued_messages, MAX_SESSION_PENDING_TURNS)
    out = await ctx.read(lambda c: _queue(c, params.session_id, limit))
    held = ctx.sessions.waiting_for(params.session_id) if out.queue else None
    if held is None:
        return out
    name, why = held
    return attrs.evolve(out, waiting=QueueWait(limit=name, scope=why.scope, value=why.limit))  # type: ignore[arg-type]


async def turn_cancel(ctx: ServiceContext, params: TurnCancelInput) -> TurnResult:
    """Raises `resource_not_found`, `turn_not_queued`, `revision_conflict`."""
    session_id = await ctx.read(lambda c: session_of_turn(c, params.turn_id))
    message = CancelTurn(command_of(params, ctx.actor_id), params.turn_id, params.expected_revision)
    return mutation_output(TurnResult, await ctx.sessions.ask(session_id, message))


async def turn_interrupt(ctx: ServiceContext, params: TurnInterruptInput) -> TurnResult:
    """Raises `resource_not_found`, `invalid_state` (ended), `revision_conflict`.

    A turn still dispatching (its worker has not said it started) is waited for, up to
    `DISPATCH_WAIT_S`, so an interrupt sent right after the send reaches the running turn.
    One its worker has still not taken then is given up: it ends `failed` `turn_rejected`
    and its worker is fenced, so it never starts it. A start already on its way is given
    `START_GRACE_S` more to arrive; one that cannot be fenced now (a worker on an
    Execution Node whose link is down) stays refused `invalid_state` (`details.state`
    `dispatching`).
    """
    session_id = await ctx.read(lambda c: session_of_turn(c, params.turn_id))
    notifier = ctx.sessions.notifier
    now = trio.current_time()
    deadline, last = now + DISPATCH_WAIT_S, now + DISPATCH_WAIT_S + START_GRACE_S
    while True:
        abandon = trio.current_time() >= deadline
        message = InterruptTurn(command_of(params), params.turn_id, params.expected_revision,
                                abandon=abandon)  # fmt: skip
        changed = notifier.subscribe(params.turn_id)
        try:
            try:
                result = await ctx.sessions.ask(session_id, message)
            except MaiaError as error:
                dispatching = error.details.get("state") == TurnState.DISPATCHING.value
                if not dispatching or trio.current_time() >= last:
                    raise
                with trio.move_on_at(last if abandon else deadline):
                    await changed.wait()
                continue
        finally:
            notifier.release(params.turn_id, changed)
        return mutation_output(TurnResult, result)
