"""Node identity and the counters that only move forward.

The node row holds the Node's ID (made once, on the first open) and its epoch, incremented on
every open so everything issued by an earlier run (cursors, previews) can be told apart.
Worker epochs come from a persisted counter: strictly increasing, never handed out twice by
committed transactions, across restarts.
"""

from __future__ import annotations

import sqlite3

import attrs

from maia.core import new_id


@attrs.frozen
class NodeIdentity:
    """Who this Node is and which run of it this is."""

    node_id: str
    epoch: int
    created_ms: int


def open_node_identity(conn: sqlite3.Connection, now_ms: int) -> NodeIdentity:
    """Create the node row on first use, else increment its epoch; in its own transaction."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        row = conn.execute("SELECT node_id, epoch, created_ms FROM node").fetchone()
        if row is None:
            identity = NodeIdentity(new_id("node"), 1, now_ms)
            conn.execute(
                "INSERT INTO node (singleton, node_id, epoch, created_ms) VALUES (1, ?, ?, ?)",
                (identity.node_id, identity.epoch, identity.created_ms),
            )
        else:
            identity = NodeIdentity(row[0], row[1] + 1, row[2])
            conn.execute("UPDATE node SET epoch = ?", (identity.epoch,))
        conn.execute("COMMIT")
    except BaseException:
        conn.execute("ROLLBACK")
        raise
    return identity


def next_worker_epoch(conn: sqlite3.Connection) -> int:
    """The next worker epoch: strictly greater than every epoch committed before.

    Call inside a `Storage.write` fn, in the transaction that records the attempt.
    """
    row = conn.execute(
        "UPDATE counters SET value = value + 1 WHERE name = 'worker_epoch' RETURNING value"
    ).fetchone()
    return int(row[0])
