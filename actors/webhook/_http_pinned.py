"""httpx's transport for one checked webhook destination (see `_http`): its pool dials the
destination's address only. Imported at the first delivery, so an idle Node never loads
httpx, httpcore or anyio.
"""

# ruff: noqa: ASYNC109  (httpcore's network backend interface takes `timeout` arguments)

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

import httpcore
import httpx
import trio

from ._http import Connector
from ._ssrf import Destination


class _PinnedBackend(httpcore.AsyncNetworkBackend):
    """httpcore's network backend for one checked destination: dials its address only."""

    def __init__(self, destination: Destination, connector: Connector) -> None:
        self._destination = destination
        self._connector = connector

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        target = self._destination.target
        if (host.lower().rstrip("."), port) != (target.host.rstrip("."), target.port):
            raise httpcore.ConnectError(f"{host}:{port} is not the checked destination")
        return await self._connector.connect(self._destination.address, port, timeout)

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Any = None
    ) -> httpcore.AsyncNetworkStream:
        raise httpcore.ConnectError("webhooks never use unix sockets")

    async def sleep(self, seconds: float) -> None:
        await trio.sleep(seconds)


class _PinnedTransport(httpx.AsyncHTTPTransport):
    def __init__(self, destination: Destination, connector: Connector, ssl_context: Any) -> None:
        super().__init__(verify=ssl_context, trust_env=False, retries=0)
        # httpx 0.28 takes no network backend, so its pool is rebuilt with ours (pinned).
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=ssl_context,
            max_connections=1,
            retries=0,
            network_backend=_PinnedBackend(destination, connector),
        )
