"""Receipt IDs that carry their sequence (issue 21 goal 4): `receipts` keeps no index of
receipt IDs, `receipt.get` and lists by target still find every receipt (new and from
before the migration), a failed mutation leaves no receipt and no hole in the sequence, and
a database made by the previous schema upgrades with its receipts and keys intact."""

from __future__ import annotations

import functools
import sqlite3
from pathlib import Path

import pytest
import trio

import storage
from maia.core import FakeClock, MaiaError, digest_json
from storage._schema import _PAGES_RECEIPT_ID_FROM_SEQUENCE

from ._fixtures import create_session_apply, schema_before, seed_project, session_row


def _create(command_id: str, *, fail: bool = False) -> storage.WriteFn[storage.MutationResult]:
    row = session_row()
    apply = create_session_apply(row, 5)

    def body(conn: sqlite3.Connection) -> storage.Applied:
        applied = apply(conn)
        if fail:
            raise RuntimeError("refused after writing")
        return applied

    def run(conn: sqlite3.Connection) -> storage.MutationResult:
        seed_project(conn)
        return storage.run_mutation(
            conn,
            key=storage.MutationKey("actor_a", "session.create", command_id),
            input_digest=digest_json({"c": command_id}),
            now_ms=5,
            apply=body,
        )

    return run


async def test_a_receipt_is_found_by_its_id_without_an_index_of_ids(tmp_path: Path) -> None:
    """A receipt's ID carries its sequence; `get_receipt` finds it by the row's key, refuses
    an ID whose tail does not match with `resource_not_found`; the only index on receipt
    IDs is the partial one of older IDs."""
    async with storage.open_storage(tmp_path / "m.db", clock=FakeClock()) as store:
        made = [(await store.write(_create(f"c{n}"))).receipt for n in range(3)]
        assert [r.sequence for r in made] == [1, 2, 3]
        for receipt in made:
            assert storage.id_position("receipt", receipt.receipt_id) == receipt.sequence
            got = await store.read(
                functools.partial(storage.get_receipt, receipt_id=receipt.receipt_id)
            )
            assert got == receipt
        forged = storage.positioned_id("receipt", 2)
        with pytest.raises(MaiaError) as refused:
            await store.read(functools.partial(storage.get_receipt, receipt_id=forged))
        assert refused.value.code == "resource_not_found"
        indexed = await store.read(
            lambda c: {r[0] for r in c.execute("SELECT name FROM pragma_index_list('receipts')")}
        )
    assert indexed == {"receipts_by_legacy_id", "receipts_by_target", "sqlite_autoindex_receipts_1"}


async def test_a_failed_mutation_in_a_batch_leaves_no_receipt_and_no_gap(tmp_path: Path) -> None:
    """In one batch, a mutation that raises after writing leaves nothing (no receipt, no key:
    a retry runs again) while the others commit with consecutive sequences."""
    async with storage.open_storage(tmp_path / "m.db", clock=FakeClock()) as store:
        await store.write(_create("c0"))
        outcomes: dict[str, object] = {}

        async def submit(command_id: str, fail: bool) -> None:
            try:
                outcomes[command_id] = (await store.write(_create(command_id, fail=fail))).receipt
            except RuntimeError as error:
                outcomes[command_id] = error

        async with trio.open_nursery() as nursery:
            for number, fail in enumerate((False, True, False), 1):
                nursery.start_soon(submit, f"c{number}", fail)
        assert isinstance(outcomes["c2"], RuntimeError)
        kept = await store.read(lambda c: storage.list_receipts(c))
        assert sorted(r.command_id for r in kept) == ["c0", "c1", "c3"]
        assert [r.sequence for r in kept] == [1, 2, 3]
        retried = await store.write(_create("c2"))
        assert retried.delivery == "new"
        assert retried.receipt.sequence == 4


def _database_of_the_previous_schema(path: Path) -> list[tuple[int, str]]:
    """A database as the schema before this migration left it, with receipts under
    time-led IDs (one naming two targets) and a hole in its rowids; (rowid, ID) of each."""
    conn = sqlite3.connect(path, isolation_level=None)
    schema_before(conn, _PAGES_RECEIPT_ID_FROM_SEQUENCE)
    made = []
    for rowid, target in ((1, "session_x"), (2, "session_y"), (5, "session_z")):
        receipt_id = storage.new_ordered_id("receipt")
        conn.execute(
            "INSERT INTO receipts (rowid, receipt_id, actor_id, operation_id, command_id,"
            " input_digest, outcome, targets, event_ids, effect_ids, evidence_digest, result,"
            " created_ms, target_id, correlation_id) VALUES (?, ?, 'actor_a', 'session.create',"
            " ?, 'd', 'applied', '[]', '[]', '[]', 'e', '{}', 1, ?, NULL)",
            (rowid, receipt_id, f"old-{rowid}", target),
        )
        made.append((rowid, receipt_id))
    conn.execute(
        "INSERT INTO receipt_targets (target_id, receipt_id) VALUES ('session_w', ?)",
        (made[2][1],),
    )
    conn.close()
    return made


async def test_the_migration_keeps_receipts_their_sequences_and_keys(tmp_path: Path) -> None:
    """Upgrading a database of the previous schema keeps every receipt with its sequence and
    ID; each old ID is still found, a list by a second target still finds its receipt, an
    old key still replays, and the next receipt continues the sequence."""
    path = tmp_path / "old.db"
    old = _database_of_the_previous_schema(path)
    async with storage.open_storage(path, clock=FakeClock()) as store:
        kept = await store.read(lambda c: storage.list_receipts(c))
        assert [(r.sequence, r.receipt_id) for r in kept] == old
        for sequence, receipt_id in old:
            got = await store.read(functools.partial(storage.get_receipt, receipt_id=receipt_id))
            assert got.sequence == sequence
        by_second = await store.read(lambda c: storage.list_receipts(c, target_id="session_w"))
        assert [r.sequence for r in by_second] == [5]
        by_first = await store.read(lambda c: storage.list_receipts(c, target_id="session_y"))
        assert [r.sequence for r in by_first] == [2]
        stored = await store.read(
            lambda c: storage.find_receipt(
                c, actor_id="actor_a", operation_id="session.create", command_id="old-2"
            )
        )
        assert stored is not None
        assert stored.receipt_id == old[1][1]
        made = await store.write(_create("new-1"))
        assert made.receipt.sequence == 6
        assert storage.id_position("receipt", made.receipt.receipt_id) == 6
        with pytest.raises(sqlite3.IntegrityError):
            await store.write(
                lambda c: c.execute(
                    "INSERT INTO receipts (receipt_id, actor_id, operation_id, command_id,"
                    " input_digest, outcome, targets, event_ids, effect_ids, evidence_digest,"
                    " result, created_ms) VALUES ('r', 'actor_a', 'session.create', 'old-2',"
                    " 'd', 'applied', '[]', '[]', '[]', 'e', '{}', 1)"
                )
            )
