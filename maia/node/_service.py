"""The Node process: home, lock, token, root tree, discovery file, graceful stop.

Start order is the root tree's: take the home's lock (one Node per home), open storage
(a Node that cannot open its storage stops here with a clear message), build the services,
then the API server; only once it listens is the discovery file written, so a client that
finds the file finds a Node that answers. Stop is the reverse: the API closes, the services
stop, storage flushes and closes, the discovery and token files are removed.
"""

from __future__ import annotations

import logging
import os
import signal
import sqlite3
from collections.abc import Callable, Iterable
from typing import Any

import attrs
import orjson
import trio

from maia.client._discovery import Discovery, process_start_time, read_discovery
from maia.protocol import Clock, MaiaError, SystemClock
from maia.service import open_services
from storage import Storage, open_storage

from . import _handlers as _handlers  # registers the handlers
from ._dispatch import HANDLERS, Dispatcher
from ._home import NodeHome, write_private_file, write_token
from ._lock import NodeLock
from ._server import ApiServer

log = logging.getLogger("maia.node")


class NodeStartError(Exception):
    """The Node could not start; the message says why, for a person."""


@attrs.frozen
class NodeConfig:
    home: NodeHome
    port: int = 0
    clock: Clock = attrs.field(factory=SystemClock)


@attrs.frozen
class Mailbox:
    """One bounded mailbox as node.status reports it."""

    name: str
    depth: int
    capacity: int


@attrs.define
class NodeServices:
    """What handlers reach through `Call.services`.

    Later issues add their services here (actor registries, the worker supervisor, the
    scheduler) and report their load through `mailbox_sources` and `worker_count`.
    """

    config: NodeConfig
    storage: Storage
    started_wall_ms: int
    started_monotonic_ms: int
    api: ApiServer | None = None
    mailbox_sources: list[Callable[[], Iterable[Mailbox]]] = attrs.field(factory=list)
    worker_count: Callable[[], int] = lambda: 0
    sessions: Any = None  # maia.service.ServiceContext: the Session runtime and its handlers

    @property
    def clock(self) -> Clock:
        return self.config.clock

    def mailbox_depths(self) -> list[Mailbox]:
        return [box for source in self.mailbox_sources for box in source()]

    def live_workers(self) -> int:
        return self.worker_count()


@attrs.frozen
class NodeRunning:
    """Reported by `serve_node` once the API listens and the discovery file is written."""

    url: str
    node_id: str
    epoch: int
    pid: int


def _storage_failure(home: NodeHome, error: BaseException) -> NodeStartError:
    detail = error.message if isinstance(error, MaiaError) else str(error) or type(error).__name__
    return NodeStartError(f"cannot open storage at {home.database_path}: {detail}")


async def serve_node(config: NodeConfig, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
    """Run a Node until cancelled.

    Raises `NodeStartError` when the home is unusable, another Node holds it, or storage
    cannot be opened.
    """
    home = config.home
    try:
        home.ensure()
    except MaiaError as error:
        raise NodeStartError(error.message) from error
    lock = NodeLock(home)
    try:
        lock.acquire()
    except MaiaError as error:
        raise NodeStartError(error.message) from error
    try:
        stale = read_discovery(home.discovery_path)
        if stale is not None:
            log.warning("replacing a stale discovery file left by pid %d", stale.pid)
            home.discovery_path.unlink(missing_ok=True)
        token = write_token(home)
        try:
            await _serve_with_storage(config, token, task_status)
        finally:
            home.discovery_path.unlink(missing_ok=True)
            home.token_path.unlink(missing_ok=True)
    finally:
        lock.release()


async def _serve_with_storage(config: NodeConfig, token: str, task_status: Any) -> None:
    home = config.home
    opened = False
    try:
        async with open_storage(home.database_path, clock=config.clock) as store:
            opened = True
            await _serve_services(config, store, token, task_status)
    except (MaiaError, sqlite3.Error, OSError, ValueError) as error:
        if opened:
            raise
        raise _storage_failure(home, error) from error


async def _serve_services(config: NodeConfig, store: Storage, token: str, task_status: Any) -> None:
    home = config.home
    services = NodeServices(config, store, config.clock.wall_ms(), config.clock.monotonic_ms())
    dispatcher = Dispatcher(HANDLERS)
    api = ApiServer(dispatcher, services, token=token)
    services.api = api
    async with (
        open_services(store, clock=config.clock, home=home.root) as sessions,
        trio.open_nursery() as nursery,
    ):
        services.sessions = sessions
        services.worker_count = sessions.runtime.live_workers
        port = await nursery.start(api.serve, config.port)
        url = f"ws://127.0.0.1:{port}/api/v1"
        pid = os.getpid()
        record = Discovery(
            pid=pid,
            start_time=process_start_time(pid) or 0.0,
            url=url,
            token_path=str(home.token_path),
            node_id=store.node_id,
        )
        write_private_file(home.discovery_path, orjson.dumps(record.to_json()))
        log.info("Maia Node %s (epoch %d) listening on %s", store.node_id, store.node_epoch, url)
        task_status.started(NodeRunning(url, store.node_id, store.node_epoch, pid))


async def run_node(config: NodeConfig, *, on_ready: Callable[[NodeRunning], None]) -> None:
    """Run a Node in this process until SIGTERM or SIGINT, then stop gracefully.

    Raises `NodeStartError` as `serve_node` does.
    """
    try:
        with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            async with trio.open_nursery() as nursery:
                running = await nursery.start(serve_node, config)
                on_ready(running)
                async for signum in signals:
                    log.info("received %s: stopping", signal.Signals(signum).name)
                    break
                nursery.cancel_scope.cancel()
    except BaseExceptionGroup as group:
        start_errors = group.subgroup(NodeStartError)
        if start_errors is not None and len(start_errors.exceptions) == 1:
            raise start_errors.exceptions[0] from None
        raise
