"""The machine, webhook and routine kinds open on demand: a real Node with none of their rows
never imports them and its first operation of one opens it; a database with a routine opens
the routine kind at the start (recovery); the declared events and operations are the kinds'
own; a machine kind opened late routes the Session kind's worker starts to its placement."""

from __future__ import annotations

import re
import sqlite3
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import trio

from actors import TransitionTable
from actors._diagrams import kinds
from actors.machine import MACHINES, PlacingSupervisor
from maia.client import open_client
from maia.config import UserConfig
from maia.core import SystemClock
from maia.protocol import REGISTRY
from maia.service import ServiceContext, open_services, running_kind
from maia.service._kinds import ON_DEMAND, is_open
from maia.service._register import _DEFERRED
from storage import open_storage

from ..._node_process import serving_node
from ._helpers import params

TIMEOUT_S = 60
_PACKAGES = {"machine": "actors.machine", "webhook": "actors.webhook",
             "routine": "actors.routine"}  # fmt: skip


def _kinds_imported(path: Path) -> set[str]:
    """The on-demand kinds whose modules `python -X importtime` reported loading so far (by
    their submodules: a module loaded by `importlib.import_module` is not reported)."""
    text = path.read_text(encoding="utf-8", errors="replace")
    names = re.findall(r"^import time:\s*\d+ \|\s*\d+ \|\s*(\S+)\s*$", text, re.M)
    return {kind for kind, package in _PACKAGES.items()
            for name in names if name == package or name.startswith(f"{package}.")}  # fmt: skip


def _emits(tables: tuple[TransitionTable[Any, Any], ...]) -> set[str]:
    return {row.emits for table in tables
            for row in (*table.rows, *((table.creation,) if table.creation else ()))
            if row.emits}  # fmt: skip


def test_the_declared_events_and_operations_are_the_kinds_own() -> None:
    """Each on-demand kind's declared events are exactly its tables' (so the journal's event
    types are the same without importing it), and its deferred operations exactly the
    handlers its module serves."""
    real = {kind.name: kind for kind in kinds()}
    for name, declared in ON_DEMAND.items():
        assert declared.emits == _emits(real[name].tables), name
        assert declared.load() is real[name]
    for prefix, _, module, table in _DEFERRED:
        handlers = getattr(__import__(f"maia.service.{module[1:]}", fromlist=[table]), table)
        ops = {op.operation_id for op in REGISTRY if op.operation_id.startswith(prefix)}
        assert set(handlers) == ops, prefix


@asynccontextmanager
async def _services(home: Path) -> AsyncIterator[ServiceContext]:
    clock = SystemClock()
    async with (
        open_storage(home / "maia.db", clock=clock, synchronous="NORMAL") as store,
        open_services(store, clock=clock, home=home, config=UserConfig()) as services,
    ):
        yield services


async def test_a_database_with_a_routine_opens_the_routine_kind_at_the_start(
    tmp_path: Path,
) -> None:
    """Run 1 opens no on-demand kind until a routine op; run 2 on its database opens the
    routine kind before serving (its recovery runs), and leaves the other two closed."""
    from maia.service._projects import project_add
    from maia.service._routines import ROUTINE_HANDLERS

    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    (tmp_path / "app").mkdir()
    async with _services(home) as ctx:
        assert [is_open(ctx.runtime, name) for name in ON_DEMAND] == [False, False, False]
        project = await project_add(ctx, params("project.add", {
            "commandId": "p", "rootPath": str(tmp_path / "app")}))  # fmt: skip
        body = {"commandId": "c1", "name": "r",
                "schedule": {"cron": "0 0 1 1 *", "timezone": "UTC"},
                "template": {"projectId": project.project.project_id, "prompt": "hi"}}  # fmt: skip
        preview = await ROUTINE_HANDLERS["routine.create.preview"](
            ctx, params("routine.create.preview", body)
        )
        await ROUTINE_HANDLERS["routine.create.confirm"](ctx, params(
            "routine.create.confirm", {**body, "inputDigest": preview.input_digest,
                                       "proof": preview.proof}))  # fmt: skip
        assert is_open(ctx.runtime, "routine")
    async with _services(home) as ctx:
        assert [is_open(ctx.runtime, name) for name in ON_DEMAND] == [False, False, True]


_HOOK = "hook_" + "a" * 32
_STUCK = (
    "INSERT INTO webhooks (webhook_id, url, event_types, secret_env, state, state_reason,"
    " revision, after_position, created_ms, updated_ms) VALUES (?, 'https://example.com/in',"
    " '[\"turn.completed\"]', 'HOOK_SECRET', 'removed', 'removed by the operator', 2, 0,"
    " 1000, 2000)",
    "INSERT INTO webhook_deliveries (delivery_id, webhook_id, seq, message_id, event_id,"
    " event_type, body, state, attempts, last_reason, created_ms, updated_ms, finished_ms)"
    " VALUES ('dlv_1', ?, 1, 'msg_1', 'evt_1', 'turn.completed', X'7B7D', 'cancelled', 0,"
    " 'webhook removed', 1000, 2000, 2000)",
    "INSERT INTO webhook_attempts (delivery_id, number, started_ms, outcome)"
    " SELECT 'dlv_1', 1, 1500, 'sending' WHERE ? IS NOT NULL",
)


async def test_an_attempt_a_dead_node_left_sending_is_settled_with_no_active_webhook(
    tmp_path: Path,
) -> None:
    """The last webhook removed while its attempt was in flight, then the Node died (and no
    rescue timer is left): the next start opens the webhook kind for that attempt alone,
    whose recovery settles it `unknown` (`webhooks.show` says so; it stayed `sending`
    forever, since with no active webhook and no timer the kind never opened at the start);
    the start after that finds no work and leaves the kind closed."""
    from maia.service._webhooks import webhooks_show

    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    async with _services(home) as ctx:
        assert not is_open(ctx.runtime, "webhook")
    with sqlite3.connect(home / "maia.db") as conn:  # the state a SIGKILL mid-attempt left
        for statement in _STUCK:
            conn.execute(statement, (_HOOK,))
        assert conn.execute("SELECT count(*) FROM actor_timers").fetchone() == (0,)
    conn.close()
    async with _services(home) as ctx:
        assert is_open(ctx.runtime, "webhook")
        shown = await webhooks_show(ctx, params("webhooks.show", {"webhookId": _HOOK}))
    (delivery,) = shown.deliveries
    assert delivery.state == "cancelled"
    ((attempt),) = delivery.attempt_log
    assert (attempt.outcome, attempt.reason) == ("unknown", "the Node stopped during the attempt")
    assert attempt.finished_at is not None
    async with _services(home) as ctx:
        assert [is_open(ctx.runtime, name) for name in ON_DEMAND] == [False, False, False]


async def test_a_machine_kind_opened_late_places_the_sessions_workers(tmp_path: Path) -> None:
    """Opened after the Session kind, the machine kind's placing supervisor takes the worker
    starts the Session kind was given; closed, the pool has its own supervisor back."""
    from actors import WorkerPool

    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    async with _services(home) as ctx:
        pool = ctx.runtime.extension(WorkerPool)
        given: Any = pool.supervisor  # what the Session kind was given at its open
        local, before = given.inner, given.placing
        service = await running_kind(ctx.runtime, MACHINES)
        assert before is None
        assert service.local_supervisor is local
        assert isinstance(given.placing, PlacingSupervisor)
        assert given.placing.inner is local
        assert await running_kind(ctx.runtime, MACHINES) is service  # opened once
        assert pool.supervisor is given
    assert pool.supervisor is local


def test_a_real_node_imports_a_kind_only_at_its_first_operation(tmp_path: Path) -> None:
    """A Node on a fresh home imports none of the three kinds; `webhooks.list`,
    `routine.list` and `machine.list` each import (and open) their own, and answer."""
    home = tmp_path / "home"
    errors_path = tmp_path / "stderr.txt"
    command = [sys.executable, "-P", "-X", "importtime", "-m", "maia.node", "start",
               "--home", str(home)]  # fmt: skip
    with errors_path.open("w") as errors, serving_node(command, home, stderr=errors) as (node, _):
        assert _kinds_imported(errors_path) == set()
        opened: set[str] = set()
        for name, op_id, key in (("webhook", "webhooks.list", "webhooks"),
                                 ("routine", "routine.list", "routines"),
                                 ("machine", "machine.list", "machines")):  # fmt: skip
            answer = trio.run(_request, home, op_id)
            assert answer[key] == [], op_id
            opened.add(name)
            assert _kinds_imported(errors_path) == opened, op_id
    assert node.returncode == 0


async def _request(home: Path, op_id: str) -> Any:
    async with open_client(home=home, timeout_s=TIMEOUT_S) as client:
        return await client.request(op_id, {})
