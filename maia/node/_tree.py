"""The Node's root supervisor tree: storage, the observation hub, the services, the API.

Each child is a `supervision.ChildSpec`; the strategy is rest-for-one, so a child that
fails is restarted together with every child started after it (a new storage handle means
new services and a new API server on top of it), while earlier children keep running.
Children hand what they open to the next ones through `NodeServices`.

The API child writes the discovery file once it listens (and again after a restart, since
the port may change), so a client that finds the file finds a Node that answers.
"""

from __future__ import annotations

import logging
import os
import sqlite3
from typing import Any

import attrs
import orjson
import trio

from actors import WorkerPool
from maia.core import Discovery, MaiaError, process_start_time
from maia.observe import open_hub
from maia.service import journal_event_types, open_services
from storage import open_storage
from supervision import ChildContext, ChildSpec, RestartPolicy, Strategy, Supervisor

from ._dispatch import HANDLERS, Dispatcher
from ._home import write_private_file
from ._server import ApiServer
from ._services import NodeServices

log = logging.getLogger("maia.node")
STORAGE_OPEN_TIMEOUT_MS = 120_000
SERVICES_READY_TIMEOUT_MS = 120_000  # recovery of many Sessions may take a while


@attrs.define
class TreeState:
    """What the children share beyond `NodeServices`: the first storage failure, the URL."""

    token: str
    storage_error: BaseException | None = None
    url: str = ""


async def _storage_child(
    services: NodeServices, state: TreeState, ctx: ChildContext, *, task_status: Any
) -> None:
    config = services.config
    opened = False
    try:
        async with open_storage(config.home.database_path, clock=config.clock) as store:
            opened = True
            services.storage = store
            services.node_id, services.epoch = store.node_id, store.node_epoch
            task_status.started()
            await ctx.stop_requested.wait()
    except (MaiaError, sqlite3.Error, OSError, ValueError) as error:
        if not opened:
            state.storage_error = error  # for the clear message of a failed start
        raise
    finally:
        services.storage = None


async def _observations_child(
    services: NodeServices, state: TreeState, ctx: ChildContext, *, task_status: Any
) -> None:
    async with open_hub(services.storage_or_raise(), services.config.clock,
                        journal_types=journal_event_types) as hub:  # fmt: skip
        services.observations = hub
        try:
            task_status.started()
            await ctx.stop_requested.wait()
        finally:
            services.observations = None


async def _services_child(
    services: NodeServices, state: TreeState, ctx: ChildContext, *, task_status: Any
) -> None:
    config = services.config
    hub = services.observations
    async with open_services(
        services.storage_or_raise(),
        clock=config.clock,
        home=config.home.root,
        live=hub.publish_live if hub is not None else None,
        diagnostics=hub.diagnostics.report if hub is not None else None,
    ) as sessions:
        services.sessions = sessions
        services.worker_count = sessions.runtime.extension(WorkerPool).live_workers
        try:
            task_status.started()
            await ctx.stop_requested.wait()
        finally:
            services.sessions = None
            services.worker_count = lambda: 0


async def _api_child(
    services: NodeServices, state: TreeState, ctx: ChildContext, *, task_status: Any
) -> None:
    config = services.config
    api = ApiServer(Dispatcher(HANDLERS), services, token=state.token)
    services.api = api
    async with trio.open_nursery() as nursery:
        # A restarted API server takes its old port back when it can.
        port = await nursery.start(api.serve, config.port or _port_of(state.url))
        store = services.storage_or_raise()
        state.url = f"ws://127.0.0.1:{port}/api/v1"
        pid = os.getpid()
        record = Discovery(
            pid=pid,
            start_time=process_start_time(pid) or 0.0,
            url=state.url,
            token_path=str(config.home.token_path),
            node_id=store.node_id,
        )
        write_private_file(config.home.discovery_path, orjson.dumps(record.to_json()))
        log.info(
            "Maia Node %s (epoch %d) listening on %s", store.node_id, store.node_epoch, state.url
        )
        task_status.started()
        await ctx.stop_requested.wait()
        nursery.cancel_scope.cancel()


def _port_of(url: str) -> int:
    try:
        return int(url.rsplit(":", 1)[1].split("/", 1)[0]) if url else 0
    except (IndexError, ValueError):
        return 0


def root_tree(services: NodeServices, state: TreeState) -> Supervisor:
    """The root supervisor: storage, observations, services, API, restarted rest-for-one."""

    def child(name: str, function: Any, ready_timeout_ms: int = 15_000) -> ChildSpec:
        async def start(ctx: ChildContext, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
            await function(services, state, ctx, task_status=task_status)

        return ChildSpec(name, start, ready_timeout_ms=ready_timeout_ms)

    return Supervisor(
        "node",
        [
            child("storage", _storage_child, STORAGE_OPEN_TIMEOUT_MS),
            child("observations", _observations_child),
            child("services", _services_child, SERVICES_READY_TIMEOUT_MS),
            child("api", _api_child),
            *(child(name, start) for name, start in services.config.children),
        ],
        strategy=Strategy.REST_FOR_ONE,
        policy=RestartPolicy(intensity=3, period_ms=10_000),
    )
