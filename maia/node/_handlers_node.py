"""Handlers of node.hello and node.status.

`node.hello` checks the client's protocol version (a mismatch is `protocol_incompatible`)
and reports whether its registry digest equals ours; the SDK refuses to go on when it does
not (during alpha, client and Node upgrade together). `node.status` reads storage once:
`integrity: ok` means what the spec says, the storage connection is open and answered a
read, not that an integrity check passed.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING

from maia import __version__
from maia.protocol import MaiaError, format_timestamp_ms

from ._dispatch import HANDLERS, Call
from ._ops import (
    NODE_CAPABILITY_NAMES,
    PROTOCOL_VERSION,
    REGISTRY,
    Empty,
    MailboxDepth,
    NodeHelloInput,
    NodeHelloOutput,
    NodeStatusOutput,
    StorageStatus,
)

if TYPE_CHECKING:
    from ._services import NodeServices

MAX_MAILBOXES = 64


@HANDLERS.handler("node.hello")
async def node_hello(call: Call, params: NodeHelloInput) -> NodeHelloOutput:
    """Raises `protocol_incompatible` when the client speaks another protocol version."""
    services: NodeServices = call.services
    if params.protocol != PROTOCOL_VERSION:
        raise MaiaError(
            "protocol_incompatible",
            f"protocol {params.protocol} is not {PROTOCOL_VERSION}",
            {"client": params.protocol, "node": PROTOCOL_VERSION},
        )
    return NodeHelloOutput(
        node_id=services.storage_or_raise().node_id,
        epoch=services.storage_or_raise().node_epoch,
        protocol=PROTOCOL_VERSION,
        registry_digest=REGISTRY.digest,
        version=__version__,
        capabilities=NODE_CAPABILITY_NAMES,
        registry_match=params.registry_digest in (None, REGISTRY.digest),
    )


def _read_counts(conn: sqlite3.Connection) -> tuple[int, dict[str, int], int]:
    version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    by_state = {
        str(state): int(count)
        for state, count in conn.execute("SELECT state, count(*) FROM sessions GROUP BY state")
    }
    queued = int(conn.execute("SELECT count(*) FROM turns WHERE state = 'queued'").fetchone()[0])
    return version, by_state, queued


@HANDLERS.handler("node.status")
async def node_status(call: Call, params: Empty) -> NodeStatusOutput:
    """Never fails on storage trouble: it reports `integrity: unavailable` instead."""
    services: NodeServices = call.services
    store = services.storage_or_raise()
    try:
        version, by_state, queued = await store.read(_read_counts)
        storage = StorageStatus(integrity="ok", schema_version=version)
    except (MaiaError, sqlite3.Error):
        version, by_state, queued = 0, {}, 0
        storage = StorageStatus(integrity="unavailable", schema_version=0)
    stats = store.statistics()
    mailboxes = [
        MailboxDepth(name="storage", depth=stats.mailbox_depth, capacity=stats.mailbox_size)
    ]
    mailboxes.extend(
        MailboxDepth(name=box.name, depth=box.depth, capacity=box.capacity)
        for box in services.mailbox_depths()
    )
    mailboxes.sort(key=lambda box: (-box.depth, box.name))
    clock = services.clock
    return NodeStatusOutput(
        node_id=store.node_id,
        epoch=store.node_epoch,
        version=__version__,
        protocol=PROTOCOL_VERSION,
        registry_digest=REGISTRY.digest,
        started_at=format_timestamp_ms(services.started_wall_ms),
        uptime_ms=max(0, clock.monotonic_ms() - services.started_monotonic_ms),
        storage=storage,
        sessions_by_state=by_state,
        live_workers=services.live_workers(),
        queued_turns=queued,
        mailboxes=tuple(mailboxes[:MAX_MAILBOXES]),
        capabilities=NODE_CAPABILITY_NAMES,
    )
