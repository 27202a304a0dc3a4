"""The Python SDK of the Maia Node (anyio + wsproto: runs under trio and under asyncio).

    async with open_client() as client:
        status = await client.node.status()
        answer = await send_and_wait(client, session_id, "Hi!", timeout_s=60)

    with connect_sync() as client:  # blocking, one request at a time, no event loop
        status = client.request("node.status")

Methods are a projection of the operation registry; failures are `MaiaError` with a code
from the closed set. Every name loads on first use (module `__getattr__`), so a program
using only the blocking client imports no event loop.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from maia._lazy import lazy_exports

if TYPE_CHECKING:
    from maia.core import NODE_ENV as NODE_ENV
    from maia.core import Discovery as Discovery
    from maia.core import MaiaError as MaiaError
    from maia.core import default_home as default_home
    from maia.core import find_live_node as find_live_node
    from maia.core import process_start_time as process_start_time
    from maia.core import read_discovery as read_discovery
    from maia.core import read_token as read_token

    from ._client import DEFAULT_TIMEOUT_S as DEFAULT_TIMEOUT_S
    from ._client import MaiaClient as MaiaClient
    from ._client import open_client as open_client
    from ._locate import Endpoint as Endpoint
    from ._locate import locate_node as locate_node
    from ._observations import ObservationFeed as ObservationFeed
    from ._observations import SessionFeed as SessionFeed
    from ._observations import StreamFrame as StreamFrame
    from ._observations import attach_session as attach_session
    from ._observations import observe_events as observe_events
    from ._projection import OPERATION_TREE as OPERATION_TREE
    from ._sync import SyncClient as SyncClient
    from ._sync import connect_sync as connect_sync
    from ._turns import send_and_wait as send_and_wait
    from ._turns import send_and_wait_wire as send_and_wait_wire
    from ._wire import MAX_MESSAGE_BYTES as MAX_MESSAGE_BYTES

_LAZY = {
    "NODE_ENV": "maia.core",
    "Discovery": "maia.core",
    "MaiaError": "maia.core",
    "default_home": "maia.core",
    "find_live_node": "maia.core",
    "process_start_time": "maia.core",
    "read_discovery": "maia.core",
    "read_token": "maia.core",
    "Endpoint": "._locate",
    "locate_node": "._locate",
    "MAX_MESSAGE_BYTES": "._wire",
    "DEFAULT_TIMEOUT_S": "._client",
    "MaiaClient": "._client",
    "open_client": "._client",
    "ObservationFeed": "._observations",
    "SessionFeed": "._observations",
    "StreamFrame": "._observations",
    "attach_session": "._observations",
    "observe_events": "._observations",
    "OPERATION_TREE": "._projection",
    "SyncClient": "._sync",
    "connect_sync": "._sync",
    "send_and_wait": "._turns",
    "send_and_wait_wire": "._turns",
}
__all__ = [
    "DEFAULT_TIMEOUT_S", "MAX_MESSAGE_BYTES", "NODE_ENV", "OPERATION_TREE", "Discovery",
    "Endpoint", "MaiaClient", "MaiaError", "ObservationFeed", "SessionFeed", "StreamFrame",
    "SyncClient", "attach_session", "connect_sync", "default_home", "find_live_node",
    "locate_node", "observe_events", "open_client", "process_start_time", "read_discovery",
    "read_token", "send_and_wait", "send_and_wait_wire",
]  # fmt: skip


__getattr__, __dir__ = lazy_exports(__name__, _LAZY, globals())
