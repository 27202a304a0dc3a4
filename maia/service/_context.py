"""What the session, turn, project and record handlers share, and the helpers they all use.

Handlers are plain functions `(ServiceContext, params) -> output`, so tests call them on a
real storage and runtime without a socket; `register` adapts them to the Node's dispatcher.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import attrs

from actors import ActorRuntime
from actors.session import SESSIONS, Command, SessionRuntime
from maia.config import UserConfig
from maia.protocol import Clock, MaiaError, check, digest_json, to_json
from storage import MutationResult, Storage

from ._admitted import AdmittedConfigs

T = TypeVar("T")
LOCAL_ACTOR = "local-user"


@attrs.frozen
class ServiceContext:
    """The Node's services as the handlers see them."""

    store: Storage
    clock: Clock
    config: UserConfig
    runtime: ActorRuntime  # every kind's actors: `runtime[KIND]`
    home: Path  # where projects.jsonc is mirrored
    admitted: AdmittedConfigs  # the admitted configuration work runs under (limits, executors)
    actor_id: str = LOCAL_ACTOR  # whom receipts name: the local user, or the Node's automation
    # The correlation the commands it runs pass on (a routine fire's), else their commandId.
    correlation_id: str | None = None

    @property
    def sessions(self) -> SessionRuntime:
        """The Session kind. Raises `unavailable` when it is not running."""
        return self.runtime[SESSIONS]

    @property
    def projects_file(self) -> Path:
        return self.home / "projects.jsonc"

    def as_actor(self, actor_id: str, correlation_id: str | None = None) -> ServiceContext:
        """The same services acting as another actor (the routine scheduler), its commands
        correlated with `correlation_id` when given."""
        return attrs.evolve(self, actor_id=actor_id, correlation_id=correlation_id)

    def now(self) -> int:
        return self.clock.wall_ms()

    async def read(self, fn: Callable[[sqlite3.Connection], T]) -> T:
        return await self.store.read(fn)


def command_of(
    params: Any,
    actor_id: str = LOCAL_ACTOR,
    correlation_id: str | None = None,
    *,
    outside: tuple[str, ...] = (),
) -> Command:
    """The idempotency key and normalized-input digest of a mutation's params (and the
    correlation its events carry, when not its commandId). `outside`: wire fields that are
    no part of the command (turn.send's wait), left out of the digest as if absent (an
    absent optional field has no key in `to_json`'s form)."""
    body = {k: v for k, v in to_json(params).items() if k != "commandId" and k not in outside}
    return Command(params.command_id, actor_id, digest_json(body), correlation_id)


def mutation_output(cls: type[T], result: MutationResult) -> T:
    """The op's output: the stored result with its delivery and receipt."""
    wire = {"delivery": result.delivery, "receiptId": result.receipt.receipt_id, **result.result}
    return check(cls, wire, root="result")


def not_found(resource: str, row_id: str, path: str | None = None) -> MaiaError:
    """`resource_not_found`; with `path`, naming the input field that held the ID (in the
    message and `details.path`, as a schema refusal names its field)."""
    message = f"{resource} {row_id} does not exist"
    if path is None:
        return MaiaError("resource_not_found", message, {"resource": resource, "id": row_id})
    return MaiaError(
        "resource_not_found",
        f"{path}: {message}",
        {"resource": resource, "id": row_id, "path": path},
    )


def session_of_turn(conn: sqlite3.Connection, turn_id: str) -> str:
    """The Session a turn belongs to. Raises `resource_not_found`."""
    row = conn.execute("SELECT session_id FROM turns WHERE turn_id = ?", (turn_id,)).fetchone()
    if row is None:
        raise not_found("turn", turn_id)
    return str(row[0])


def require_session(conn: sqlite3.Connection, session_id: str) -> None:
    """Raises `resource_not_found` unless the Session exists."""
    if (
        conn.execute("SELECT 1 FROM sessions WHERE session_id = ?", (session_id,)).fetchone()
        is None
    ):
        raise not_found("session", session_id)


def project_of_session(conn: sqlite3.Connection, session_id: str) -> str:
    """The Project a Session works in. Raises `resource_not_found`."""
    row = conn.execute(
        "SELECT project_id FROM sessions WHERE session_id = ?", (session_id,)
    ).fetchone()
    if row is None:
        raise not_found("session", session_id)
    return str(row[0])
