"""The Node's capabilities, declared in the protocol (node.hello returns them).

A capability names a family of behaviour a client may rely on; the registry names the ops.
Changing this tuple changes the registry digest (it is part of the op reference).
"""

from __future__ import annotations

from typing import Final

NODE_CAPABILITIES: Final[tuple[tuple[str, str], ...]] = (
    ("sessions", "Sessions: create, list, show, wait, stop, archive, rename"),
    ("turn-queue", "turn.send queues up to 8 pending turns a Session; cancel and interrupt"),
    ("receipts", "every mutation leaves a receipt readable with receipt.get and receipt.list"),
    ("idempotent-mutations", "mutations are idempotent by (actor, operation, commandId)"),
    ("events", "events.read pages the journal by signed cursor, event ID or owner sequence"),
    (
        "observations",
        "/api/v1/observations: node.hello, then observe.events streams "
        "snapshots, batches, gaps and resets",
    ),
    ("session-attach", "session.attach follows one Session's turns and items live"),
    ("projects", "project.add, project.list, project.show"),
    ("schema-inspection", "every op's input and output JSON Schema (maia <noun> <verb> --schema)"),
)

CAPABILITY_NAMES: Final = tuple(name for name, _ in NODE_CAPABILITIES)
