"""Previews and their one-time proofs.

A preview binds an actor, an operation, the normalized input digest and the expected target
revisions, and returns a random proof once; only the proof's sha256 is stored. Confirming
spends it inside the mutation's transaction, so a proof is spent exactly when its mutation
commits. Expiry is judged on the injected clock's monotonic reading of the same Node run
(epoch): a preview issued before a restart has expired. Wall time is stored for people only.
Every refusal raises before anything is written.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
import sqlite3
from collections.abc import Sequence
from typing import Final

import attrs
import orjson

from maia.core import Clock, MaiaError, new_id

DEFAULT_PREVIEW_TTL_MS: Final = 30_000


@attrs.frozen
class ExpectedTarget:
    """A target a preview was judged against, at the revision the confirm must still find."""

    target_type: str
    target_id: str
    expected_revision: int | None


@attrs.frozen
class IssuedPreview:
    """What the preview operation returns; `proof` exists only here, never in storage."""

    preview_id: str
    proof: str
    operation_id: str
    actor_id: str
    input_digest: str
    targets: tuple[ExpectedTarget, ...]
    issued_ms: int
    expires_ms: int  # wall time for display (expiresAt)


def _hash(proof: str) -> str:
    return hashlib.sha256(proof.encode()).hexdigest()


def _new_proof() -> str:
    """A one-time proof: 32 random bytes, base64url. Never one that begins with '-' (one in
    64 would): the CLI takes a proof as a positional argument, where click reads such a word
    as an option. Dropping those leaves 255.9 of its 256 bits."""
    while True:
        proof = secrets.token_urlsafe(32)
        if not proof.startswith("-"):
            return proof


def issue_preview(
    conn: sqlite3.Connection,
    *,
    actor_id: str,
    operation_id: str,
    input_digest: str,
    targets: Sequence[ExpectedTarget] = (),
    clock: Clock,
    node_epoch: int,
    ttl_ms: int = DEFAULT_PREVIEW_TTL_MS,
) -> IssuedPreview:
    """Store a preview and return it with its one-time proof. Raises ValueError if ttl <= 0."""
    if ttl_ms <= 0:
        raise ValueError("a preview must live a positive time")
    now_ms = clock.wall_ms()
    preview = IssuedPreview(
        preview_id=new_id("preview"),
        proof=_new_proof(),
        operation_id=operation_id,
        actor_id=actor_id,
        input_digest=input_digest,
        targets=tuple(targets),
        issued_ms=now_ms,
        expires_ms=now_ms + ttl_ms,
    )
    conn.execute(
        "INSERT INTO previews (preview_id, actor_id, operation_id, input_digest, proof_hash,"
        " targets, node_epoch, expires_monotonic_ms, expires_ms, created_ms)"
        " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
        (
            preview.preview_id,
            actor_id,
            operation_id,
            input_digest,
            _hash(preview.proof),
            orjson.dumps([attrs.astuple(t) for t in preview.targets]),
            node_epoch,
            clock.monotonic_ms() + ttl_ms,
            preview.expires_ms,
            now_ms,
        ),
    )
    return preview


def _refuse(code: str, message: str, preview_id: str | None) -> MaiaError:
    return MaiaError(code, message, {"previewId": preview_id})


def consume_preview(
    conn: sqlite3.Connection,
    *,
    preview_id: str | None,
    proof: str | None,
    actor_id: str,
    operation_id: str,
    input_digest: str,
    command_id: str,
    clock: Clock,
    node_epoch: int,
) -> tuple[ExpectedTarget, ...]:
    """Spend the preview's proof; return the targets it bound (the caller compares revisions).

    Raises `confirmation_required` (no preview or proof), `preview_mismatch` (unknown preview,
    wrong proof, or another actor, operation or input), `proof_spent`, `preview_expired`.
    """
    if not preview_id or not proof:
        raise MaiaError(
            "confirmation_required",
            f"{operation_id} needs a preview and its proof",
            {"method": operation_id},
        )
    row = conn.execute(
        "SELECT actor_id, operation_id, input_digest, proof_hash, targets, node_epoch,"
        " expires_monotonic_ms, spent_ms FROM previews WHERE preview_id = ?",
        (preview_id,),
    ).fetchone()
    if row is None or not hmac.compare_digest(row[3], _hash(proof)):
        raise _refuse("preview_mismatch", f"no preview {preview_id} with that proof", preview_id)
    stored_actor, stored_operation, stored_digest, _, targets, epoch, expires, spent = row
    if spent is not None:
        raise _refuse(
            "proof_spent", f"the proof for preview {preview_id} was already used", preview_id
        )
    if (stored_actor, stored_operation, stored_digest) != (actor_id, operation_id, input_digest):
        raise _refuse(
            "preview_mismatch",
            f"the input does not match preview {preview_id} (actor, operation or input digest)",
            preview_id,
        )
    if epoch != node_epoch or clock.monotonic_ms() >= expires:
        raise _refuse("preview_expired", f"preview {preview_id} expired", preview_id)
    conn.execute(
        "UPDATE previews SET spent_ms = ?, spent_command_id = ? WHERE preview_id = ?",
        (clock.wall_ms(), command_id, preview_id),
    )
    return tuple(ExpectedTarget(*t) for t in orjson.loads(targets))


def prune_previews(conn: sqlite3.Connection, *, before_ms: int) -> int:
    """Delete previews created before `before_ms` (wall time; they expired long ago)."""
    return int(conn.execute("DELETE FROM previews WHERE created_ms < ?", (before_ms,)).rowcount)
