"""Handlers of node.hello and node.status.

`node.hello` checks the client's protocol version (a mismatch is `protocol_incompatible`)
and reports whether its registry digest equals ours (`maia.protocol.answer_hello`, which the
observation socket's hello shares; no digest is no match); the SDK refuses to go on when it
does not (during alpha, client and Node upgrade together). `node.status` reads storage once:
`integrity: ok` means what the spec says, the storage connection is open and answered a
read, not that an integrity check passed. Its counts come from one shared read at most
`STATUS_TTL_MS` old (`_status_counts`), and its `configFiles` from a check of the files at
most `FILES_FRESH_MS` old (`maia.service.AdmittedConfigs.files`), so polling it from many
clients does not load storage or the file system. Both handlers are plain functions: hello
answers at once, status too while those reads are fresh (see `_dispatch`).
"""

from __future__ import annotations

import contextlib
import sqlite3
from collections.abc import Awaitable, Sequence
from typing import TYPE_CHECKING, Literal

import attrs

from maia import __version__
from maia.core import MaiaError
from maia.protocol import ConfigScopeStatus, answer_hello
from maia.service import ServiceContext, config_files_status

from ._dispatch import HANDLERS, Call, Encoded
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
from ._status_wire import MailboxRow, sorted_rows

if TYPE_CHECKING:
    from ._services import NodeServices

MAX_MAILBOXES = 64
MAX_CONFIG_FILES = 64
MAX_FILE_PROBLEMS = 5  # node.status names the file; `maia config check` lists every problem


@HANDLERS.handler("node.hello")
def node_hello(call: Call, params: NodeHelloInput) -> NodeHelloOutput:
    """Raises `protocol_incompatible` when the client speaks another protocol version.
    Answers at once (no I/O)."""
    store = call.services.storage_or_raise()
    return answer_hello(
        params, node_id=store.node_id, epoch=store.node_epoch, registry_digest=REGISTRY.digest
    )


Counts = tuple[int, dict[str, int], int]  # as `_status_counts` reads them
Files = Sequence[ConfigScopeStatus]  # the files that are not what is admitted


@HANDLERS.handler("node.status")
def node_status(call: Call, params: Empty) -> Encoded | Awaitable[Encoded]:
    """Never fails on storage trouble: it reports `integrity: unavailable` instead. Answers
    at once while the shared counts and files check are fresh, else once they are read."""
    services: NodeServices = call.services
    now_ms = services.clock.monotonic_ms()
    store = services.storage
    counts = None if store is None else services.status_counts.fresh(store, now_ms)
    files = _fresh_config_files(services, now_ms)
    if (store is None or counts is not None) and files is not None:
        return _status(services, counts, files)
    return _read_status(services, now_ms)


async def _read_status(services: NodeServices, now_ms: int) -> Encoded:
    counts: Counts | None = None
    if services.storage is not None:
        with contextlib.suppress(MaiaError, sqlite3.Error):  # integrity: unavailable
            counts = await services.status_counts.read(services.storage, now_ms)
    return _status(services, counts, await _config_files(services, now_ms))


def _status(services: NodeServices, counts: Counts | None, files: Files) -> Encoded:
    """The answer from the counts (None: storage did not answer) and the files, in wire
    form; built again only when one of its inputs but the uptime changed (`_status_wire`)."""
    store = services.storage
    rows: list[MailboxRow] = []
    if store is not None:
        stats = store.statistics()
        rows.append((-stats.mailbox_depth, "storage", stats.mailbox_size))
    rows.extend((-box.depth, box.name, box.capacity) for box in services.mailbox_depths())
    mailboxes = sorted_rows(rows, MAX_MAILBOXES)
    live_workers = services.live_workers()
    files = tuple(files)  # a snapshot: the kept inputs must not change under the kept answer
    inputs = (services.node_id, services.epoch, services.started_at, counts, files, mailboxes,
              live_workers)  # fmt: skip

    def build() -> NodeStatusOutput:
        version, by_state, queued = counts if counts is not None else (0, {}, 0)
        integrity: Literal["ok", "unavailable"] = "ok" if counts is not None else "unavailable"
        return NodeStatusOutput(
            node_id=services.node_id,
            epoch=services.epoch,
            version=__version__,
            protocol=PROTOCOL_VERSION,
            registry_digest=REGISTRY.digest,
            started_at=services.started_at,
            uptime_ms=0,  # set on every answer
            storage=StorageStatus(integrity=integrity, schema_version=version),
            sessions_by_state=by_state,
            live_workers=live_workers,
            queued_turns=queued,
            mailboxes=tuple(
                MailboxDepth(name=name, depth=-depth, capacity=capacity)
                for depth, name, capacity in mailboxes
            ),
            capabilities=NODE_CAPABILITY_NAMES,
            config_files=_shown(files),
        )

    uptime_ms = max(0, services.clock.monotonic_ms() - services.started_monotonic_ms)
    return services.status_wire.answer(inputs, build, uptime_ms)


def _fresh_config_files(services: NodeServices, now_ms: int) -> Files | None:
    """`_config_files`' answer when it needs no new check, else None."""
    ctx: ServiceContext | None = services.sessions
    if ctx is None:
        return ()
    return ctx.admitted.fresh_files(now_ms)


async def _config_files(services: NodeServices, now_ms: int) -> Files:
    """The configuration files that are not what is admitted (none while the Session
    services are stopped or storage fails: status never fails for them)."""
    ctx: ServiceContext | None = services.sessions
    if ctx is None:
        return ()
    try:
        found = await ctx.admitted.files(ctx.home, lambda: config_files_status(ctx), now_ms)
    except (MaiaError, sqlite3.Error, OSError):
        return ()
    return found


def _shown(found: Files) -> tuple[ConfigScopeStatus, ...]:
    return tuple(
        attrs.evolve(status, problems=status.problems[:MAX_FILE_PROBLEMS])
        for status in found[:MAX_CONFIG_FILES]
    )
