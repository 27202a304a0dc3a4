"""Sessions and turns as the wire shows them, read from their rows in one query each.

Used inside the actor's write transactions (a mutation's stored result) and by the read
handlers, so a Session looks the same whichever operation returns it.
"""

from __future__ import annotations

import functools
import sqlite3
from collections.abc import Sequence
from typing import Any, Final

import attrs
import orjson

from maia.core import INPUT_PREVIEW_MAX_BYTES, MaiaError, format_timestamp_ms
from maia.protocol import Session, SessionPrompt, Turn, Usage

from ._sql_turns import ITEMS_OF_TURN, ITEMS_OF_TURN_ROW
from ._status import status_of

SETTLED_IDLE_MS: Final = 300_000
_PENDING: Final = "('queued', 'dispatching', 'running')"

SESSION_COLUMNS: Final = (
    "s.session_id, s.project_id, s.executor, s.title, s.labels, s.cwd, s.state, s.activity,"
    " s.revision, s.created_ms, s.updated_ms, s.archived, s.archived_ms, s.archive_summary,"
    " s.transcript_path, s.latest_turn_id,"
    " (SELECT t.state FROM turns t WHERE t.turn_id = s.latest_turn_id),"
    f" (SELECT count(*) FROM turns t WHERE t.session_id = s.session_id"
    f" AND t.seq >= s.unfinished_from AND t.state IN {_PENDING}),"
    " s.usage,"
    " (SELECT json_object('approvalId', a.approval_id, 'kind', a.kind, 'expiresMs', a.expires_ms,"
    " 'summary', a.summary, 'options', json(a.options)) FROM approvals a"
    " WHERE a.session_id = s.session_id AND a.state = 'pending' ORDER BY a.created_ms LIMIT 1),"
    " s.failure_message"
)
TURN_COLUMNS: Final = (
    "turn_id, session_id, state, revision, created_ms, text, started_ms, finished_ms,"
    " failure_reason, usage"
)


def _missing(resource: str, row_id: str) -> MaiaError:
    return MaiaError(
        "resource_not_found", f"{resource} {row_id} does not exist",
        {"resource": resource, "id": row_id},
    )  # fmt: skip


def input_preview(text: str) -> str:
    """The start of `text`, at most 160 UTF-8 bytes, never cutting a character."""
    data = text.encode("utf-8")
    if len(data) <= INPUT_PREVIEW_MAX_BYTES:
        return text
    return data[:INPUT_PREVIEW_MAX_BYTES].decode("utf-8", "ignore")


def session_from_row(row: Sequence[Any], now_ms: int) -> Session:
    (session_id, project_id, executor, title, labels, cwd, state, activity, revision,
     created, updated, archived, archived_ms, summary, transcript, latest, latest_state,
     pending, usage, waiting_on, failure) = row  # fmt: skip
    resting = pending == 0 and activity == "stopped"
    settled = resting and (state in ("stopped", "failed") or now_ms - updated >= SETTLED_IDLE_MS)
    reason = None
    if settled:
        reason = state if state in ("stopped", "failed") else "idle"
    return Session(
        session_id=session_id,
        project_id=project_id,
        executor=executor,
        state=state,
        revision=revision,
        created_at=format_timestamp_ms(created),
        updated_at=format_timestamp_ms(updated),
        cwd=cwd,
        labels=tuple(sorted(orjson.loads(labels))),
        archived=bool(archived),
        title=title,
        activity=activity,
        latest_turn_id=latest,
        latest_turn_state=latest_state,
        pending_turns=pending,
        settled=settled,
        settled_reason=reason,
        archived_at=format_timestamp_ms(archived_ms) if archived_ms is not None else None,
        summary=summary,
        transcript_path=transcript,
        failure_message=failure,
        status=status_of(state, activity),  # type: ignore[arg-type]
        prompt=_prompt(waiting_on, state),
        usage=usage_from_json(usage),
    )


def usage_from_json(text: str | None) -> Usage | None:
    if not text:
        return None
    found = orjson.loads(text)
    return Usage(**{_SNAKE.get(k, k): v for k, v in found.items() if _SNAKE.get(k, k) in _USAGE})


_SNAKE: Final = {"inputTokens": "input_tokens", "outputTokens": "output_tokens",
                 "cacheReadTokens": "cache_read_tokens", "cacheWriteTokens": "cache_write_tokens",
                 "costMicros": "cost_micros"}  # fmt: skip
_USAGE: Final = frozenset(f.name for f in attrs.fields(Usage))


def _prompt(waiting_on: str | None, state: str) -> SessionPrompt | None:
    """The pending approval the Session waits on (only while it reads waiting-approval)."""
    if waiting_on is None or state != "waiting-approval":
        return None
    found = orjson.loads(waiting_on)
    expires = found.get("expiresMs")
    return SessionPrompt(
        approval_id=found["approvalId"], kind=found["kind"],
        expires_at=format_timestamp_ms(expires) if expires is not None else None,
        summary=found["summary"], options=tuple(found["options"]),
    )  # fmt: skip


def list_session(session: Session) -> Session:
    """A Session as a session.list page shows it: the prompt named by approvalId, kind and
    expiresAt only (100 Sessions of 8 KiB text would pass the response limit)."""
    if session.prompt is None:
        return session
    return attrs.evolve(session, prompt=attrs.evolve(session.prompt, summary=None, options=None))


def mutation_session(session: Session) -> Session:
    """A Session as a mutation's result shows it: without `activity`, `latestTurnState`,
    `status`, `prompt` and `usage`, which only session.list, show and wait return (spec:
    Session wait operation)."""
    return attrs.evolve(session, activity=None, latest_turn_state=None, status=None,
                        prompt=None, usage=None)  # fmt: skip


def session_view(conn: sqlite3.Connection, session_id: str, now_ms: int) -> Session:
    """Raises `resource_not_found`."""
    row = conn.execute(
        f"SELECT {SESSION_COLUMNS} FROM sessions s WHERE s.session_id = ?", (session_id,)
    ).fetchone()
    if row is None:
        raise _missing("session", session_id)
    return session_from_row(row, now_ms)


OUTPUT_TEXT_CHARS: Final = 262_144  # of outputText, which every turn view carries
OUTPUT_TEXT_BYTES: Final = 256 * 1024  # so a view of 4-byte characters stays small too


def output_text(conn: sqlite3.Connection, turn_id: str) -> str | None:
    """The turn's message items' text, in order (None before any message), at most
    `OUTPUT_TEXT_CHARS` characters and `OUTPUT_TEXT_BYTES` bytes (see `output_cut`)."""
    return _output(conn, turn_id)[0]


def _output(conn: sqlite3.Connection, turn_id: str) -> tuple[str | None, bool]:
    rows = conn.execute(
        # Whole texts (each item's is bounded when stored): SQLite's substr() and length()
        # would end at a NUL character.
        f"SELECT text, truncated FROM turn_items WHERE {ITEMS_OF_TURN} AND kind = 'message'"
        " ORDER BY item_key",
        (turn_id, turn_id),
    ).fetchall()
    return assembled_output(rows)


def assembled_output(items: Sequence[tuple[str | None, Any]]) -> tuple[str | None, bool]:
    """outputText and whether it is cut, from the turn's message items' `(text, truncated)`
    in order (as `turn_view` reads them, or as the actor wrote them)."""
    rows = [((t or "")[: OUTPUT_TEXT_CHARS + 1], len(t or "") > OUTPUT_TEXT_CHARS or bool(cut))
            for t, cut in items]  # fmt: skip
    if not rows:
        return None, False
    text = "".join(r[0] for r in rows)
    cut = any(r[1] for r in rows) or len(text) > OUTPUT_TEXT_CHARS
    text = text[:OUTPUT_TEXT_CHARS]
    if len(text) * 4 > OUTPUT_TEXT_BYTES and len(text.encode("utf-8")) > OUTPUT_TEXT_BYTES:
        text = text.encode("utf-8")[:OUTPUT_TEXT_BYTES].decode("utf-8", "ignore")
        cut = True
    return text, cut


@functools.lru_cache(maxsize=1024)
def _second_text(seconds: int) -> str:
    return format_timestamp_ms(seconds * 1000)[:-5]  # without ".000Z"


def _timestamp(epoch_ms: int) -> str:
    """`format_timestamp_ms`, with the date and time to the second cached (strftime was a
    visible share of each commit's turn snapshots)."""
    seconds, millis = divmod(epoch_ms, 1000)
    return f"{_second_text(seconds)}.{millis:03d}Z"


def turn_from_row(row: Sequence[Any], text: str | None, failure: str | None = None,
                  cut: bool = False) -> Turn:  # fmt: skip
    turn_id, session_id, state, revision, created, prompt, started, finished, reason = row[:9]
    usage = row[9] if len(row) > 9 else None
    return Turn(
        turn_id=turn_id,
        session_id=session_id,
        state=state,
        revision=revision,
        created_at=_timestamp(created),
        input_preview=input_preview(prompt),
        started_at=_timestamp(started) if started is not None else None,
        completed_at=_timestamp(finished) if finished is not None else None,
        failure_reason=reason,
        failure_message=failure,
        output_text=text,
        output_truncated=True if cut else None,
        usage=usage_from_json(usage),
    )


def new_turn_view(turn_id: str, session_id: str, state: str, revision: int, created_ms: int,
                  text: str) -> Turn:  # fmt: skip
    """The view `turn_view` reads of a turn its own send transaction just created, still
    queued or dispatching: no start, end, failure, usage or item is possible yet, so the
    write's own values are the row (no read)."""
    if state not in ("queued", "dispatching"):
        raise ValueError(f"a new turn is queued or dispatching, not {state}")
    return turn_from_row((turn_id, session_id, state, revision, created_ms, text, None, None, None),
                         None)  # fmt: skip


def ended_turn_view(base: Turn, state: str, revision: int, started_ms: int, finished_ms: int,
                    output: tuple[str | None, bool]) -> Turn:  # fmt: skip
    """The view `turn_view` reads of a turn that ended `completed` in a transaction that
    knows its every item (`output`: `assembled_output` of its message items) and holds its
    send's view (`base`: its creation and prompt): no failure, and no usage (an actor that
    records a turn's usage reads its view back instead)."""
    if state != "completed":
        raise ValueError(f"an ended turn built from memory is completed, not {state}")
    text, cut = output
    return Turn(turn_id=base.turn_id, session_id=base.session_id, state="completed",
                revision=revision,
                created_at=base.created_at, input_preview=base.input_preview,
                started_at=_timestamp(started_ms), completed_at=_timestamp(finished_ms),
                output_text=text, output_truncated=True if cut else None)  # fmt: skip


# A failed turn's own message (its first `error` item) as turn.show carries it: cut here.
FAILURE_MESSAGE_CHARS: Final = 4096
# That message as a scalar subquery on a `turns` row named `t`, for a page of many turns in
# one query (routine.show's failed fires).
FAILURE_MESSAGE_OF_TURN_ROW: Final = (
    f"(SELECT substr(i.text, 1, {FAILURE_MESSAGE_CHARS}) FROM turn_items i"
    f" WHERE {ITEMS_OF_TURN_ROW} AND i.kind = 'error' ORDER BY i.item_key LIMIT 1)"
)


def turn_view(conn: sqlite3.Connection, turn_id: str) -> Turn:
    """Raises `resource_not_found`."""
    row = conn.execute(f"SELECT {TURN_COLUMNS} FROM turns WHERE turn_id = ?", (turn_id,)).fetchone()
    if row is None:
        raise _missing("turn", turn_id)
    failure = None
    if row[2] == "failed":  # the worker's own account, when it gave one
        found = conn.execute(
            f"SELECT text FROM turn_items WHERE {ITEMS_OF_TURN} AND kind = 'error'"
            " ORDER BY item_key",
            (turn_id, turn_id),
        ).fetchone()
        failure = found[0][:FAILURE_MESSAGE_CHARS] if found is not None else None
    # A queued turn has no items yet (only a dispatched turn's worker makes them).
    text, cut = (None, False) if row[2] == "queued" else _output(conn, turn_id)
    return turn_from_row(row, text, failure, cut)
