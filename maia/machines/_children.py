"""The machine link as children of a Node's root tree (`NodeConfig.children`).

`control_child(host, port, cert, key)`: the Control Node's listener for Execution Nodes, on
an address the user chose, apart from the loopback-only API (wss:// when given a
certificate and its key). `execution_child(url, token)`: the
Execution Node's outgoing link. Both start after the API (rest-for-one: a restart of the
services restarts them too) and write what they listen on or hold to the Node's log. Each
opens the machine kind first: a Node opens it on demand (`maia.service.running_kind`).
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

import trio

from actors.machine import MACHINES
from maia.node import NodeServices
from maia.service import running_kind
from supervision import ChildContext

from ._execution import ExecutionLink
from ._listener import MachineListener
from ._outbox_store import OutboxStore
from ._tls import listener_tls

log = logging.getLogger("maia.machines")
Child = tuple[str, Any]


def control_child(host: str, port: int, cert: Path | None = None,
                  key: Path | None = None) -> Child:  # fmt: skip
    async def start(services: NodeServices, state: Any, ctx: ChildContext, *,
                    task_status: Any) -> None:  # fmt: skip
        machines = await running_kind(services.sessions_or_raise().runtime, MACHINES)
        listener = MachineListener(services.storage_or_raise(), machines, services.clock)
        tls = None if cert is None or key is None else listener_tls(cert, key)
        async with trio.open_nursery() as nursery:
            bound = await nursery.start(listener.serve, host, port, tls)
            machines.listening = (host, bound)
            if tls is None:
                log.info("machine link listening on ws://%s:%d/machines/v1", host, bound)
            else:
                log.info("machine link listening on wss://%s:%d/machines/v1 (certificate sha256"
                         " %s)", host, bound, tls.fingerprint)  # fmt: skip
            task_status.started()
            await ctx.stop_requested.wait()
            nursery.cancel_scope.cancel()

    return ("machines-listen", start)


def execution_child(control_url: str, token: str | None) -> Child:
    async def start(services: NodeServices, state: Any, ctx: ChildContext, *,
                    task_status: Any) -> None:  # fmt: skip
        store = services.storage_or_raise()
        machines = await running_kind(services.sessions_or_raise().runtime, MACHINES)
        link = ExecutionLink(services.config.home.root, control_url, token, store.node_id,
                             services.clock, machines.local_supervisor,
                             OutboxStore(store))  # fmt: skip
        machines.execution = link
        async with trio.open_nursery() as nursery:
            await nursery.start(link.run)
            task_status.started()
            await ctx.stop_requested.wait()
            nursery.cancel_scope.cancel()

    return ("machines-execution", start)
