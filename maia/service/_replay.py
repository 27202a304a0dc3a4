"""Idempotent replay of confirms, first: a retried command is answered from its receipt.

A confirm's retry (the same actor, operation and commandId with the same values) must get
its stored result (`delivery: duplicate`) whatever has happened since: the routine it made
is the Project's 20th, the Project it moved is at its new root, the configuration it was
judged in was replaced. So the handlers look the receipt up before judging anything, and
judge only a command that has none. `digests` lists the forms the command's key took, the
current one first: routine confirms before registry 0.13.0 bound their proof into the key
(`legacy_confirm_digest`), and their receipts replay too when the retry carries the same
proof, or when the receipt itself shows the same values (`_routines._same_values`: a
disable's names the routine and the revision it moved from, a create's result is the
routine it made, a run's fire names its routine and sits after the receipt of the revision
it bound). A receipt under another digest is not replayed here: the handler goes on and the
write path refuses it as before.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Sequence

from maia.core import digest_json
from storage import MutationResult, Receipt, find_receipt


def legacy_confirm_digest(input_digest: str, proof: str | None) -> str:
    """The idempotency digest a routine confirm was stored under before registry 0.13.0."""
    return digest_json({"inputDigest": input_digest, "proof": proof})


SameValues = Callable[[Receipt], bool]


def stored_replay(conn: sqlite3.Connection, *, actor_id: str, operation_id: str,
                  command_id: str, digests: Sequence[str],
                  same: SameValues | None = None) -> MutationResult | None:  # fmt: skip
    """The stored result of this command when its receipt holds one of `digests` (or, for
    a receipt under an older key, `same(receipt)` proves it was made with these values),
    else None (no receipt, or one with other values: the caller's write refuses that)."""
    stored = find_receipt(conn, actor_id=actor_id, operation_id=operation_id,
                          command_id=command_id)  # fmt: skip
    if stored is None:
        return None
    if stored.normalized_input_digest not in digests and (same is None or not same(stored)):
        return None
    return MutationResult("duplicate", stored.result, stored)
