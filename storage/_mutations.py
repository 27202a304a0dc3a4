"""Idempotent mutations: run once per `(actorId, operationId, commandId)`, leave a receipt.

`run_mutation` is called inside a `Storage.write` fn, so the duplicate check, the preview
proof consumption, the mutation itself (state rows and events) and the receipt with its key
all commit in one transaction or not at all. The writer runs requests one after another, so
two concurrent requests with the same key cannot both execute: the second sees the first's
receipt (same batch or a later one) and replays it.

A mutation that raises leaves nothing behind (its savepoint rolls back), so a retry with the
same commandId runs again; only applied mutations are remembered.
"""

from __future__ import annotations

import contextvars
import sqlite3
from collections.abc import Callable
from typing import Any, Final, Literal

import attrs
import orjson

from maia.core import Clock, MaiaError

from ._events import Envelope, event_context
from ._evidence import evidence_digest
from ._ids import positioned_id
from ._previews import consume_preview
from ._receipts import Outcome, Receipt, ReceiptTarget, find_receipt_and_next

Delivery = Literal["new", "duplicate"]


class _Pending:
    """The receipt the running mutation will write: its sequence once a row claimed it, and
    the targets whose own row records that sequence (`claim_receipt_target`). A plain class:
    one is made per mutation."""

    __slots__ = ("claimed", "guess", "sequence")

    def __init__(self, guess: int | None = None) -> None:
        self.guess = guess  # the next sequence as the key look-up saw it (None: unknown)
        self.sequence: int | None = None
        self.claimed: set[str] | None = None  # made at the first claim


_PENDING: contextvars.ContextVar[_Pending | None] = contextvars.ContextVar(
    "maia_pending_receipt", default=None
)


def _next_sequence(conn: sqlite3.Connection) -> int:
    newest = conn.execute("SELECT max(sequence) FROM receipts").fetchone()[0]
    return 1 if newest is None else int(newest) + 1


def claim_receipt_target(conn: sqlite3.Connection, target_id: str) -> int | None:
    """The sequence the running mutation's receipt will get, for a row made by it to record
    (a turn's `send_receipt`); the receipt then names `target_id` only through that row and
    its targets, not in `receipts_by_target` (one index page fewer per turn.send). None
    outside a mutation."""
    pending = _PENDING.get()
    if pending is None:
        return None
    if pending.sequence is None:
        # The key look-up's guess: a receipt `apply` wrote before this takes it, and then the
        # receipt goes to another sequence and is indexed by target (the claim's readers
        # check the receipt at the claimed sequence names this row: `_CLAIMED`).
        guess = pending.guess
        pending.sequence = _next_sequence(conn) if guess is None else guess
    if pending.claimed is None:
        pending.claimed = set()
    pending.claimed.add(target_id)
    return pending.sequence


@attrs.frozen
class MutationKey:
    """The idempotency key of a mutation."""

    actor_id: str
    operation_id: str
    command_id: str


@attrs.frozen
class Confirmation:
    """The preview a consequential mutation must spend, as the confirm request carried it."""

    preview_id: str | None
    proof: str | None


@attrs.frozen
class Applied:
    """What a mutation body reports: its result (JSON values) and what the receipt records."""

    result: Any
    targets: tuple[ReceiptTarget, ...] = ()
    event_ids: tuple[str, ...] = ()
    effect_ids: tuple[str, ...] = ()
    project_id: str | None = None
    outcome: Outcome = "applied"


@attrs.frozen
class MutationResult:
    """The answer to a mutation: `delivery` says whether it ran now or was replayed."""

    delivery: Delivery
    result: Any
    receipt: Receipt


def run_mutation(
    conn: sqlite3.Connection,
    *,
    key: MutationKey,
    input_digest: str,
    now_ms: int,
    apply: Callable[[sqlite3.Connection], Applied],
    confirmation: Confirmation | None = None,
    clock: Clock | None = None,
    node_epoch: int | None = None,
    correlation_id: str | None = None,
) -> MutationResult:
    """Run `apply` once for `key`, or replay the stored result of an earlier run.

    Same key and same `input_digest` → the stored result with delivery "duplicate", without
    calling `apply` (even after the preview's proof expired). Same key, other digest →
    `idempotency_conflict`. With `confirmation`, its preview is spent first (needs `clock` and
    `node_epoch`); its refusals (`confirmation_required`, `preview_expired`, `proof_spent`,
    `preview_mismatch`) and anything `apply` raises propagate and record nothing.

    The events `apply` appends, and the receipt, carry `correlation_id` (default: the
    commandId) and the command as their cause (an `event_context` of the command's own).
    """
    stored, guess = find_receipt_and_next(conn, key.actor_id, key.operation_id, key.command_id)
    if stored is not None:
        if stored.normalized_input_digest != input_digest:
            raise MaiaError(
                "idempotency_conflict",
                f"command {key.command_id} was used for {key.operation_id} with other input",
                {"commandId": key.command_id, "operationId": key.operation_id},
            )
        return MutationResult("duplicate", stored.result, stored)
    if confirmation is not None:
        if clock is None or node_epoch is None:
            raise ValueError("a confirmed mutation needs the clock and the node epoch")
        consume_preview(
            conn,
            preview_id=confirmation.preview_id,
            proof=confirmation.proof,
            actor_id=key.actor_id,
            operation_id=key.operation_id,
            input_digest=input_digest,
            command_id=key.command_id,
            clock=clock,
            node_epoch=node_epoch,
        )
    correlation = correlation_id or key.command_id
    envelope = Envelope(correlation, key.command_id, None, None, key.command_id, key.actor_id)
    pending = _Pending(guess)
    token = _PENDING.set(pending)
    try:
        with event_context(envelope, inherit=False):
            applied = apply(conn)
    finally:
        _PENDING.reset(token)
    receipt = _write_receipt(conn, key, input_digest, now_ms, applied, correlation, pending, guess)
    # The round-tripped result, so a first answer and its duplicates are the same values.
    return MutationResult("new", receipt.result, receipt)


def _write_receipt(
    conn: sqlite3.Connection,
    key: MutationKey,
    input_digest: str,
    now_ms: int,
    applied: Applied,
    correlation_id: str | None = None,
    pending: _Pending | None = None,
    guess: int | None = None,
) -> Receipt:
    """Insert the receipt of `applied`. `guess`: its sequence as the key look-up saw it
    before `apply` ran (None: read it now); a claim made since is the better guess."""
    targets = applied.targets
    wire_targets = [t.to_wire() for t in targets]
    result_json = orjson.dumps(applied.result)
    targets_json = orjson.dumps(wire_targets)
    events_json = orjson.dumps(applied.event_ids)  # tuples are written as JSON arrays
    effects_json = orjson.dumps(applied.effect_ids)
    # The round-tripped result (plain JSON values), digested and answered alike.
    result = orjson.loads(result_json)
    # The evidence digest binds what the mutation did: sha256 over RFC 8785 canonical JSON
    # of the receipt's facts and the result, like every other digest (issue 20 item 5).
    evidence = evidence_digest(
        command_id=key.command_id,
        operation_id=key.operation_id,
        actor_id=key.actor_id,
        input_digest=input_digest,
        outcome=applied.outcome,
        targets=wire_targets,
        event_ids=applied.event_ids,
        effect_ids=applied.effect_ids,
        result=result,
    )
    claimed = pending.sequence if pending is not None else None
    if claimed is not None:
        guess = claimed
    # The columns after (sequence, receipt_id), before target_id.
    row = (key.actor_id, key.operation_id, key.command_id, applied.project_id, input_digest,
           applied.outcome, targets_json, events_json, effects_json, evidence, result_json,
           now_ms)  # fmt: skip
    first = targets[0].target_id if targets else None
    # A first target whose row recorded this very sequence is found through that row; any
    # other (or a claim that no longer matches the sequence) is indexed by target.
    found = pending is not None and pending.claimed is not None and first in pending.claimed
    # The receipt's ID carries its sequence (the row's key), so receipts keep no index of
    # IDs. The guess is right unless `apply` wrote receipts (then its sequence is taken: the
    # insert fails as a duplicate key and the sequence is read); any other failure repeats.
    sequence = _next_sequence(conn) if guess is None else guess
    while True:
        receipt_id = positioned_id("receipt", sequence)
        target_id = None if found and sequence == claimed else first
        try:
            conn.execute(_INSERT_RECEIPT, (sequence, receipt_id, *row, target_id, correlation_id))
        except sqlite3.IntegrityError:
            if guess is None:
                raise
            guess, sequence = None, _next_sequence(conn)
            continue
        break
    if len(targets) > 1:
        conn.executemany(
            "INSERT OR IGNORE INTO receipt_targets (target_id, receipt_id) VALUES (?, ?)",
            [(t.target_id, receipt_id) for t in targets[1:]],
        )
    return Receipt(
        receipt_id=receipt_id,
        command_id=key.command_id,
        operation_id=key.operation_id,
        actor_id=key.actor_id,
        project_id=applied.project_id,
        normalized_input_digest=input_digest,
        outcome=applied.outcome,
        targets=targets,
        event_ids=applied.event_ids,
        effect_ids=applied.effect_ids,
        evidence_digest=evidence,
        created_ms=now_ms,
        result=result,
        sequence=sequence,
        correlation_id=correlation_id,
    )


_INSERT_RECEIPT: Final = (
    "INSERT INTO receipts (sequence, receipt_id, actor_id, operation_id, command_id,"
    " project_id, input_digest, outcome, targets, event_ids, effect_ids, evidence_digest,"
    " result, created_ms, target_id, correlation_id)"
    " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
)
