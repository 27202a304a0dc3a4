"""Idle Session actors passivate and reload from storage on their next message (a real
SQLite file, the Node's handlers in-process, real echo worker processes)."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import trio

from actors.session import turn_view
from maia.config import UserConfig, parse_user_config
from maia.protocol import REGISTRY, SystemClock, decode_input
from maia.service import ServiceContext, open_services
from maia.service._projects import project_add
from maia.service._sessions import session_create
from maia.service._turns import turn_send
from storage import open_storage

from .session._open import open_session_runtime


def _params(op_id: str, body: dict[str, Any]) -> Any:
    descriptor = REGISTRY.get(op_id)
    assert descriptor is not None
    return decode_input(descriptor, body)


async def _session(ctx: ServiceContext, root: Path) -> str:
    project = await project_add(ctx, _params("project.add", {"commandId": "c-p",
                                                             "rootPath": str(root)}))  # fmt: skip
    created = await session_create(ctx, _params("session.create", {
        "commandId": "c-s", "projectId": project.project.project_id}))  # fmt: skip
    return str(created.session.session_id)


async def _turn(ctx: ServiceContext, session_id: str, command_id: str, text: str = "hi",
                wait_ms: int = 4000) -> Any:  # fmt: skip
    body = {"commandId": command_id, "sessionId": session_id, "text": text,
            "waitMilliseconds": wait_ms}  # fmt: skip
    return (await turn_send(ctx, _params("turn.send", body))).turn


async def test_an_idle_session_passivates_and_its_next_turn_reloads_it(tmp_path: Path) -> None:
    """A Session with no live effect is passivated by the idle sweep; a turn sent to it then
    rehydrates it from storage (a new incarnation) and completes, while a Session holding
    its warm worker (a live effect) is not passivated however idle."""
    root = tmp_path / "project"
    root.mkdir()
    with trio.fail_after(60):
        async with (
            open_storage(tmp_path / "maia.db", clock=SystemClock()) as store,
            open_services(store, clock=SystemClock(), home=tmp_path, config=UserConfig()) as ctx,
        ):
            registry = ctx.sessions.registry
            session_id = await _session(ctx, root)
            assert registry.is_live(session_id)
            assert registry.passivate_idle(older_than_s=0.0) == 1
            await trio.sleep(0.1)  # its task drains and stops
            assert not registry.is_live(session_id)
            spawned = registry.statistics().spawned
            turn = await _turn(ctx, session_id, "c-t1")
            assert (turn.state, turn.output_text) == ("completed", "hi")
            assert registry.is_live(session_id)
            assert registry.statistics().spawned == spawned + 1
            assert registry.passivate_idle(older_than_s=0.0) == 0  # its worker vetoes it
            again = await _turn(ctx, session_id, "c-t2")
            assert (again.state, again.session_id) == ("completed", session_id)
            assert again.turn_id != turn.turn_id
            assert registry.statistics().passivated_idle == 1


async def test_sessions_waiting_for_a_worker_slot_passivate_and_still_run(tmp_path: Path) -> None:
    """Three Sessions recover with queued turns but one worker slot and a short passivation
    bound: those waiting for the slot (no worker, so no live effect) are passivated while
    they wait, rehydrated when it is handed on, and every turn completes with its text."""
    config = parse_user_config({"swarm": {"capacity": {"maxLiveSessions": 1}}})
    names = ("one", "two", "three")

    def seed(conn: sqlite3.Connection) -> None:
        conn.execute(
            "INSERT INTO projects (project_id, project_key, root, revision, created_ms,"
            " updated_ms) VALUES ('project_r', 'rec', ?, 1, 0, 0)",
            (str(tmp_path),),
        )
        for name in names:
            conn.execute(
                "INSERT INTO sessions (session_id, project_id, executor, cwd, state, created_ms,"
                " updated_ms) VALUES (?, 'project_r', 'builtin:echo', ?, 'running', 0, 0)",
                (f"session_{name}", str(tmp_path)),
            )
            conn.execute(
                "INSERT INTO turns (turn_id, session_id, seq, state, text, created_ms)"
                " VALUES (?, ?, 1, 'queued', ?, 0)",
                (f"turn_{name}", f"session_{name}", f"/sleep 600 {name}"),
            )

    async with open_storage(tmp_path / "maia.db", clock=SystemClock()) as store:
        await store.write(seed)

        async def turn(name: str) -> Any:
            return await store.read(lambda c: turn_view(c, f"turn_{name}"))

        async with open_session_runtime(store, clock=SystemClock(), config=config,
                                        passivate_after_s=0.2) as runtime:  # fmt: skip
            with trio.fail_after(60):
                for name in names:
                    while (await turn(name)).state not in ("completed", "failed"):
                        await runtime.notifier.wait(f"turn_{name}", 0.2)
            texts = [(await turn(name)).output_text for name in names]
            assert runtime.registry.statistics().passivated_idle >= 1
    assert texts == list(names)
