"""Handlers of node.hello and node.status.

`node.hello` checks the client's protocol version (a mismatch is `protocol_incompatible`)
and reports whether its registry digest equals ours (`maia.protocol.answer_hello`, which the
observation socket's hello shares; no digest is no match); the SDK refuses to go on when it
does not (during alpha, client and Node upgrade together). `node.status` reads storage once:
`integrity: ok` means what the spec says, the storage connection is open and answered a
read, not that an integrity check passed. Its counts come from one shared read at most
`STATUS_TTL_MS` old (`_status_counts`), and its `configFiles` from a check of the files at
most `FILES_FRESH_MS` old (`maia.service.AdmittedConfigs.files`), so polling it from many
clients does not load storage or the file system.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, Literal

import attrs

from maia import __version__
from maia.core import MaiaError
from maia.protocol import ConfigScopeStatus, answer_hello
from maia.service import ServiceContext, config_files_status

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
MAX_CONFIG_FILES = 64
MAX_FILE_PROBLEMS = 5  # node.status names the file; `maia config check` lists every problem


@HANDLERS.handler("node.hello")
async def node_hello(call: Call, params: NodeHelloInput) -> NodeHelloOutput:
    """Raises `protocol_incompatible` when the client speaks another protocol version."""
    store = call.services.storage_or_raise()
    return answer_hello(
        params, node_id=store.node_id, epoch=store.node_epoch, registry_digest=REGISTRY.digest
    )


@HANDLERS.handler("node.status")
async def node_status(call: Call, params: Empty) -> NodeStatusOutput:
    """Never fails on storage trouble: it reports `integrity: unavailable` instead."""
    services: NodeServices = call.services
    clock = services.clock
    store = services.storage
    mailboxes: list[MailboxDepth] = []
    version, queued = 0, 0
    by_state: dict[str, int] = {}
    integrity: Literal["ok", "unavailable"] = "unavailable"
    if store is not None:
        try:
            version, by_state, queued = await services.status_counts.read(
                store, clock.monotonic_ms()
            )
            integrity = "ok"
        except (MaiaError, sqlite3.Error):
            pass
        stats = store.statistics()
        mailboxes.append(
            MailboxDepth(name="storage", depth=stats.mailbox_depth, capacity=stats.mailbox_size)
        )
    mailboxes.extend(
        MailboxDepth(name=box.name, depth=box.depth, capacity=box.capacity)
        for box in services.mailbox_depths()
    )
    mailboxes.sort(key=lambda box: (-box.depth, box.name))
    return NodeStatusOutput(
        node_id=services.node_id,
        epoch=services.epoch,
        version=__version__,
        protocol=PROTOCOL_VERSION,
        registry_digest=REGISTRY.digest,
        started_at=services.started_at,
        uptime_ms=max(0, clock.monotonic_ms() - services.started_monotonic_ms),
        storage=StorageStatus(integrity=integrity, schema_version=version),
        sessions_by_state=by_state,
        live_workers=services.live_workers(),
        queued_turns=queued,
        mailboxes=tuple(mailboxes[:MAX_MAILBOXES]),
        capabilities=NODE_CAPABILITY_NAMES,
        config_files=await _config_files(services),
    )


async def _config_files(services: NodeServices) -> tuple[ConfigScopeStatus, ...]:
    """The configuration files that are not what is admitted (none while the Session
    services are stopped or storage fails: status never fails for them)."""
    ctx: ServiceContext | None = services.sessions
    if ctx is None:
        return ()
    try:
        found = await ctx.admitted.files(
            ctx.home, lambda: config_files_status(ctx), services.clock.monotonic_ms()
        )
    except (MaiaError, sqlite3.Error, OSError):
        return ()
    return tuple(
        attrs.evolve(status, problems=status.problems[:MAX_FILE_PROBLEMS])
        for status in found[:MAX_CONFIG_FILES]
    )
