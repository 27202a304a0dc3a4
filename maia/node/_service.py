"""The Node process: home, lock, token, the root tree, graceful stop on signals.

Start: take the home's lock (one Node per home), replace a stale discovery file, write a
fresh token, then run the root tree (`_tree`: storage, services, API). A Node that cannot
open its storage stops there with a message naming the database. Stop is the tree's
reverse order (API, services, then storage flushes and closes); the discovery and token
files are removed last and the lock is released.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from collections.abc import Callable
from typing import Any

import attrs
import trio

from maia.core import MaiaError, read_discovery
from supervision import ChildStartFailed

from . import _handlers as _handlers  # registers the handlers
from ._gc import tune_collector
from ._home import NodeHome, write_token
from ._lock import NodeLock
from ._services import NodeConfig, NodeServices
from ._tree import TreeState, root_tree

log = logging.getLogger("maia.node")
STOP_BOUND_S = 45.0  # above the Session runtime's 30 s worker stop, below `maia node stop`'s 60 s
EXIT_STOP_OVERDUE = 70  # EX_SOFTWARE


class NodeStartError(Exception):
    """The Node could not start; the message says why, for a person."""


@attrs.frozen
class NodeRunning:
    """Reported by `serve_node` once the API listens and the discovery file is written."""

    url: str
    node_id: str
    epoch: int
    pid: int
    services: NodeServices = attrs.field(eq=False, repr=False)


def _storage_failure(home: NodeHome, error: BaseException) -> NodeStartError:
    detail = error.message if isinstance(error, MaiaError) else str(error) or type(error).__name__
    return NodeStartError(f"cannot open storage at {home.database_path}: {detail}")


async def serve_node(config: NodeConfig, *, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
    """Run a Node until cancelled.

    Raises `NodeStartError` when the home is unusable, another Node holds it, storage
    cannot be opened, or another part of the tree fails to start.
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
        try:
            state = TreeState(token=write_token(home))
        except MaiaError as error:  # a full disk: the message names the file
            raise NodeStartError(error.message) from error
        try:
            await _serve_tree(config, state, task_status)
        finally:
            home.discovery_path.unlink(missing_ok=True)
            home.token_path.unlink(missing_ok=True)
    finally:
        lock.release()


async def _serve_tree(config: NodeConfig, state: TreeState, task_status: Any) -> None:
    clock = config.clock
    services = NodeServices(config, clock.wall_ms(), clock.monotonic_ms())
    tree = root_tree(services, state)
    services.tree = tree
    failed: ChildStartFailed | None = None
    async with trio.open_nursery() as nursery:
        try:
            await nursery.start(tree.serve)
        except ChildStartFailed as error:
            failed = error  # raised below, outside the nursery, so not wrapped in a group
        else:
            store = services.storage_or_raise()
            task_status.started(
                NodeRunning(state.url, store.node_id, store.node_epoch, os.getpid(), services)
            )
    if failed is not None:
        if state.storage_error is not None:
            raise _storage_failure(config.home, state.storage_error) from failed
        raise NodeStartError(f"the Node failed to start: {failed}") from failed


async def run_node(
    config: NodeConfig,
    *,
    on_ready: Callable[[NodeRunning], None],
    stop_bound_s: float = STOP_BOUND_S,
) -> None:
    """Run a Node in this process until SIGTERM or SIGINT, then stop gracefully.

    The stop is bounded: a Node still stopping `stop_bound_s` after the signal (a part that
    ignores cancellation) is ended with exit status 70, so `maia node stop` never waits on
    it forever. Raises `NodeStartError` as `serve_node` does.
    """
    watchdog: threading.Timer | None = None
    try:
        with trio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
            async with trio.open_nursery() as nursery:
                running = await nursery.start(serve_node, config)
                tune_collector()  # only the Node's own process: serve_node also runs in tests
                on_ready(running)
                async for signum in signals:
                    log.info("received %s: stopping", signal.Signals(signum).name)
                    break
                watchdog = threading.Timer(stop_bound_s, _stop_overdue, (stop_bound_s,))
                watchdog.daemon = True
                watchdog.start()
                nursery.cancel_scope.cancel()
    except BaseExceptionGroup as group:
        start_errors = group.subgroup(NodeStartError)
        if start_errors is not None and len(start_errors.exceptions) == 1:
            raise start_errors.exceptions[0] from None
        raise
    finally:
        if watchdog is not None:
            watchdog.cancel()


def _stop_overdue(bound_s: float) -> None:
    # Runs in the timer thread: the trio loop is stuck, so nothing but exiting is left.
    log.error("the Node did not stop within %.0f s: exiting", bound_s)
    logging.shutdown()
    os._exit(EXIT_STOP_OVERDUE)
