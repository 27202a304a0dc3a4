"""A turn.send's receipt found through its turn (issue 21 goal 4): the turn records the
receipt's sequence, the receipt leaves `receipts_by_target` alone, every reader by target
still finds it, a stale claim finds nothing, and a database made by the previous schema
upgrades with its turns linked to their sends."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import orjson

import storage
from actors.session import TurnRecord, TurnRows, TurnState
from maia.core import digest_json
from storage._schema import _PAGES_RECEIPT_TARGET_ON_TURN, migrate

from ._fixtures import PROJECT_ID, schema_before, seed_project, session_row

_ACTOR = "actor_local_user"


def _open(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    migrate(conn, path)
    seed_project(conn)
    storage.insert_session(conn, session_row("session_s"))
    return conn


def _send(conn: sqlite3.Connection, command: str, turn_id: str, *, seq: int = 1,
          first: str | None = None) -> storage.MutationResult:  # fmt: skip
    """A turn.send-like mutation inserting `turn_id` through the Session's turn rows; its
    receipt names `first` (default: the turn) then the Session."""

    def apply(c: sqlite3.Connection) -> storage.Applied:
        TurnRows().insert(c, TurnRecord(turn_id, "session_s", PROJECT_ID, TurnState.QUEUED,
                                        1, "hi", seq), 5)  # fmt: skip
        targets = (
            storage.ReceiptTarget("turn", first or turn_id, "created", None, 1),
            storage.ReceiptTarget("session", "session_s", "updated", 1, 2),
        )
        return storage.Applied({"turnId": turn_id}, targets=targets, project_id=PROJECT_ID)

    key = storage.MutationKey(_ACTOR, "turn.send", command)
    digest = digest_json({"c": command})
    return storage.run_mutation(conn, key=key, input_digest=digest, now_ms=5, apply=apply,
                                correlation_id=f"corr-{command}")  # fmt: skip


def _wire_targets(target: str) -> str:
    kind = target.split("_")[0]
    wire = storage.ReceiptTarget(kind, target, "updated", 1, 2).to_wire()
    return orjson.dumps([wire]).decode()


def _targeted(conn: sqlite3.Connection, target: str) -> list[str]:
    return [r.command_id for r in storage.list_receipts(conn, target_id=target)]


def test_a_send_receipt_is_found_through_its_turn_not_the_target_index(tmp_path: Path) -> None:
    """The turn records its send's sequence; the receipt's target_id is empty (no entry in
    receipts_by_target); lists by the turn and by the Session, the idempotent replay and
    command_correlation still find it."""
    conn = _open(tmp_path / "m.db")
    try:
        first = _send(conn, "cmd-1", "turn_a")
        assert first.receipt is not None
        sequence = storage.id_position("receipt", first.receipt.receipt_id)
        row = conn.execute("SELECT send_receipt FROM turns WHERE turn_id = 'turn_a'").fetchone()
        assert row == (sequence,)
        assert conn.execute("SELECT target_id FROM receipts").fetchall() == [(None,)]
        assert _targeted(conn, "turn_a") == ["cmd-1"]
        assert _targeted(conn, "session_s") == ["cmd-1"]
        assert storage.command_correlation(conn, "turn_a", "turn.send") == "corr-cmd-1"
        assert storage.command_correlation(conn, "turn_a", "turn.cancel") is None
        assert _send(conn, "cmd-1", "turn_a").delivery == "duplicate"
    finally:
        conn.close()


def test_a_claim_the_receipt_does_not_name_first_keeps_the_target_indexed(
    tmp_path: Path,
) -> None:
    """A receipt whose first target is not the claiming row keeps its target_id (indexed),
    and the turn's own link finds nothing that does not name it; a claim outside a mutation
    hands out no sequence."""
    conn = _open(tmp_path / "m.db")
    try:
        _send(conn, "cmd-1", "turn_a", first="turn_other")
        assert conn.execute("SELECT target_id FROM receipts").fetchall() == [("turn_other",)]
        assert _targeted(conn, "turn_other") == ["cmd-1"]
        assert _targeted(conn, "turn_a") == []
        assert storage.command_correlation(conn, "turn_a", "turn.send") is None
        assert storage.claim_receipt_target(conn, "turn_b") is None
    finally:
        conn.close()


def test_a_sequence_handed_out_again_is_not_the_old_turns(tmp_path: Path) -> None:
    """After every receipt was pruned the next receipt reuses sequence 1: a turn whose send
    had it does not take the newer receipt (made for another turn) as its own."""
    conn = _open(tmp_path / "m.db")
    try:
        _send(conn, "cmd-1", "turn_a")
        conn.execute("DELETE FROM receipts")
        _send(conn, "cmd-2", "turn_b", seq=2)
        links = conn.execute("SELECT turn_id, send_receipt FROM turns ORDER BY seq").fetchall()
        assert links == [("turn_a", 1), ("turn_b", 1)]
        assert _targeted(conn, "turn_a") == []
        assert _targeted(conn, "turn_b") == ["cmd-2"]
        assert storage.command_correlation(conn, "turn_a", "turn.send") is None
        assert storage.command_correlation(conn, "turn_b", "turn.send") == "corr-cmd-2"
    finally:
        conn.close()


def test_the_migration_links_earlier_turns_to_their_sends(tmp_path: Path) -> None:
    """Upgrading a database of the previous schema with a sent turn, a turn without a send
    and other receipts: the sent turn records its send's sequence, the other none; every
    receipt keeps its target_id and is listed by it; the index is partial."""
    path = tmp_path / "old.db"
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        schema_before(conn, _PAGES_RECEIPT_TARGET_ON_TURN)
        seed_project(conn)
        storage.insert_session(conn, session_row("session_s"))
        for turn_id, seq in (("turn_a", 1), ("turn_b", 2)):
            conn.execute(
                "INSERT INTO turns (turn_id, session_id, seq, state, text, created_ms)"
                " VALUES (?, 'session_s', ?, 'completed', 'hi', 1)",
                (turn_id, seq),
            )
        receipts = ((4, "session.rename", "session_s"), (6, "turn.send", "turn_a"),
                    (9, "turn.cancel", "turn_a"))  # fmt: skip
        for sequence, operation, target in receipts:
            conn.execute(
                "INSERT INTO receipts (sequence, receipt_id, actor_id, operation_id,"
                " command_id, input_digest, outcome, targets, event_ids, effect_ids,"
                " evidence_digest, result, created_ms, target_id, correlation_id) VALUES"
                " (?, ?, ?, ?, ?, 'd', 'applied', ?, '[]', '[]', 'e', '{}', 1, ?, ?)",
                (sequence, storage.positioned_id("receipt", sequence), _ACTOR, operation,
                 f"cmd-{sequence}", _wire_targets(target), target,
                 f"corr-{sequence}"),
            )  # fmt: skip
        migrate(conn, path)
        links = conn.execute("SELECT turn_id, send_receipt FROM turns ORDER BY seq").fetchall()
        assert links == [("turn_a", 6), ("turn_b", None)]
        kept = conn.execute("SELECT sequence, target_id FROM receipts ORDER BY 1").fetchall()
        assert kept == [(4, "session_s"), (6, "turn_a"), (9, "turn_a")]
        assert _targeted(conn, "turn_a") == ["cmd-6", "cmd-9"]
        assert _targeted(conn, "session_s") == ["cmd-4"]
        assert storage.command_correlation(conn, "turn_a", "turn.send") == "corr-6"
        index = conn.execute(
            "SELECT sql FROM sqlite_schema WHERE name = 'receipts_by_target'"
        ).fetchone()[0]
        assert index.endswith("WHERE target_id IS NOT NULL")
    finally:
        conn.close()


def test_a_claim_made_after_a_nested_send_is_stale_and_the_send_is_indexed(
    tmp_path: Path,
) -> None:
    """A claim takes the key look-up's guess: a send whose apply first ran another send
    (its receipt takes that sequence) links its turn to the other receipt, which does not
    name it, so its own receipt keeps its turn indexed; every reader finds each send once."""
    conn = _open(tmp_path / "m.db")
    try:
        nested: list[storage.MutationResult] = []

        def apply(c: sqlite3.Connection) -> storage.Applied:
            nested.append(_send(c, "cmd-inner", "turn_b", seq=2))
            TurnRows().insert(c, TurnRecord("turn_a", "session_s", PROJECT_ID, TurnState.QUEUED,
                                            1, "hi", 1), 5)  # fmt: skip
            targets = (storage.ReceiptTarget("turn", "turn_a", "created", None, 1),)
            return storage.Applied({"turnId": "turn_a"}, targets=targets, project_id=PROJECT_ID)

        outer = storage.run_mutation(
            conn, key=storage.MutationKey(_ACTOR, "turn.send", "cmd-outer"),
            input_digest=digest_json({"c": "outer"}), now_ms=5, apply=apply,
            correlation_id="corr-outer",
        )  # fmt: skip
        links = conn.execute("SELECT turn_id, send_receipt FROM turns ORDER BY seq").fetchall()
        assert links == [("turn_a", 1), ("turn_b", 1)]  # turn_a's claim is stale
        assert nested[0].receipt.sequence == 1
        assert outer.receipt.sequence == 2
        stored = conn.execute("SELECT target_id FROM receipts ORDER BY sequence").fetchall()
        assert stored == [(None,), ("turn_a",)]
        assert _targeted(conn, "turn_a") == ["cmd-outer"]
        assert _targeted(conn, "turn_b") == ["cmd-inner"]
        assert storage.command_correlation(conn, "turn_a", "turn.send") == "corr-outer"
        assert storage.command_correlation(conn, "turn_b", "turn.send") == "corr-cmd-inner"
    finally:
        conn.close()
