"""Mutations: idempotency by key, receipts, compare-and-set and preview proofs."""

from __future__ import annotations

import functools
import sqlite3
from pathlib import Path

import jsonschema
import pytest

import storage
from maia.core import FakeClock, MaiaError, digest_json, is_digest
from storage._schema import migrate as storage_migrate

from ._fixtures import PROJECT_ID, count, create_session_apply, seed_project, session_row

KEY = storage.MutationKey("actor_local_user", "session.create", "cmd-1")


def _snapshot(conn: sqlite3.Connection) -> dict[str, int]:
    return {t: count(conn, t) for t in ("sessions", "events", "receipts", "receipt_targets")}


async def test_duplicate_replays_and_conflict_is_refused(tmp_path: Path) -> None:
    """Same key + input replays without running; same key + other input → idempotency_conflict."""
    async with storage.open_storage(tmp_path / "m.db", clock=FakeClock()) as store:
        await store.write(seed_project)
        digest = digest_json({"title": "t"})
        row = session_row()
        first = await store.write(
            lambda c: storage.run_mutation(
                c, key=KEY, input_digest=digest, now_ms=10, apply=create_session_apply(row, 10)
            )
        )
        runs: list[int] = []

        def must_not_run(conn: sqlite3.Connection) -> storage.Applied:
            runs.append(1)
            raise AssertionError("a duplicate ran again")

        again = await store.write(
            lambda c: storage.run_mutation(
                c, key=KEY, input_digest=digest, now_ms=20, apply=must_not_run
            )
        )
        assert first.delivery == "new"
        assert again.delivery == "duplicate"
        assert again.result == first.result
        assert again.receipt == first.receipt
        assert runs == []
        before = await store.read(_snapshot)
        with pytest.raises(MaiaError) as caught:
            await store.write(
                lambda c: storage.run_mutation(
                    c,
                    key=KEY,
                    input_digest=digest_json({"title": "u"}),
                    now_ms=30,
                    apply=must_not_run,
                )
            )
        assert caught.value.code == "idempotency_conflict"
        assert await store.read(_snapshot) == before


async def test_receipt_has_the_spec_fields_and_is_listed(tmp_path: Path) -> None:
    """The receipt carries OperationReceiptV1 fields and lists by operation, target and time."""
    async with storage.open_storage(tmp_path / "m.db", clock=FakeClock()) as store:
        await store.write(seed_project)
        rows = [session_row() for _ in range(3)]
        results = []
        for i, row in enumerate(rows):
            key = storage.MutationKey("actor_local_user", "session.create", f"cmd-{i}")
            results.append(
                await store.write(
                    functools.partial(
                        storage.run_mutation,
                        key=key,
                        input_digest=digest_json({"i": i}),
                        now_ms=1000 * (i + 1),
                        apply=create_session_apply(row, 0),
                    )
                )
            )
        wire = results[0].receipt.to_wire()
        assert wire["schemaVersion"] == "maia.receipt.v1"
        assert wire["receiptId"].startswith("receipt_")
        assert wire["projectId"] == PROJECT_ID
        assert wire["outcome"] == "applied"
        assert wire["targets"] == [
            {
                "targetType": "session",
                "targetId": rows[0].session_id,
                "resultRevision": 1,
                "disposition": "created",
            }
        ]
        assert len(wire["eventIds"]) == 1
        assert wire["effectIds"] == []
        assert is_digest(wire["evidenceDigest"])
        facts = {"commandId": "cmd-0", "operationId": "session.create",
                 "actorId": "actor_local_user", "normalizedInputDigest": digest_json({"i": 0}),
                 "outcome": "applied", "targets": wire["targets"], "eventIds": wire["eventIds"],
                 "effectIds": [], "result": results[0].result}  # fmt: skip
        assert wire["evidenceDigest"] == digest_json(facts)  # RFC 8785, like every digest
        assert wire["createdAt"] == "1970-01-01T00:00:01.000Z"
        jsonschema.validate(wire, _RECEIPT_SCHEMA)
        got = await store.read(lambda c: storage.get_receipt(c, results[1].receipt.receipt_id))
        assert got == results[1].receipt
        by_target = await store.read(
            lambda c: storage.list_receipts(c, target_id=rows[2].session_id)
        )
        assert [r.receipt_id for r in by_target] == [results[2].receipt.receipt_id]
        by_time = await store.read(
            lambda c: storage.list_receipts(c, operation_id="session.create", since_ms=2000)
        )
        assert [r.command_id for r in by_time] == ["cmd-1", "cmd-2"]
        page = await store.read(
            lambda c: storage.list_receipts(c, after_sequence=by_time[0].sequence, limit=1)
        )
        assert [r.command_id for r in page] == ["cmd-2"]
        with pytest.raises(MaiaError) as missing:
            await store.read(lambda c: storage.get_receipt(c, "receipt_nope"))
        assert missing.value.code == "resource_not_found"
        with pytest.raises(ValueError, match="30 days"):
            await store.write(lambda c: storage.prune_receipts(c, now_ms=0, retain_ms=1000))
        assert await store.write(lambda c: storage.prune_receipts(c, now_ms=2000)) == 0


async def test_stale_revision_changes_nothing(tmp_path: Path) -> None:
    """A compare-and-set at a stale revision raises revision_conflict and writes nothing."""
    async with storage.open_storage(tmp_path / "m.db", clock=FakeClock()) as store:
        await store.write(seed_project)
        row = session_row(title="before")
        await store.write(lambda c: storage.insert_session(c, row))

        def rename(
            title: str, expected: int, command: str
        ) -> storage.WriteFn[storage.MutationResult]:
            def apply(conn: sqlite3.Connection) -> storage.Applied:
                revision = storage.compare_and_set(
                    conn,
                    "sessions",
                    row.session_id,
                    expected_revision=expected,
                    changes={"title": title},
                    now_ms=50,
                )
                event = storage.append_event(
                    conn,
                    owner_id=row.session_id,
                    event_type="session.renamed",
                    payload={"title": title},
                    now_ms=50,
                    aggregate_revision=revision,
                )
                return storage.Applied(
                    {"revision": revision},
                    (
                        storage.ReceiptTarget(
                            "session", row.session_id, "updated", expected, revision
                        ),
                    ),
                    (event.event_id,),
                )

            key = storage.MutationKey("actor_local_user", "session.rename", command)
            return lambda c: storage.run_mutation(
                c, key=key, input_digest=digest_json({"title": title}), now_ms=50, apply=apply
            )

        done = await store.write(rename("after", 1, "cmd-a"))
        assert done.result == {"revision": 2}
        before = await store.read(_snapshot)
        with pytest.raises(MaiaError) as caught:
            await store.write(rename("stale", 1, "cmd-b"))
        assert caught.value.code == "revision_conflict"
        assert caught.value.details["actual"] == 2
        assert await store.read(_snapshot) == before
        current = await store.read(lambda c: storage.get_session(c, row.session_id))
        assert (current.title, current.revision, current.updated_ms) == ("after", 2, 50)
        with pytest.raises(MaiaError) as missing:
            await store.write(
                lambda c: storage.compare_and_set(
                    c, "sessions", "session_nope", expected_revision=1, changes={"title": "x"}
                )
            )
        assert missing.value.code == "resource_not_found"
        with pytest.raises(ValueError, match="cannot set"):
            await store.write(
                lambda c: storage.compare_and_set(
                    c, "sessions", row.session_id, expected_revision=2, changes={"revision": 9}
                )
            )


async def test_preview_proof_is_one_time_and_refusals_change_nothing(tmp_path: Path) -> None:
    """Confirm spends the proof once; spent, expired, mismatched or missing proofs write nothing."""
    clock = FakeClock()
    async with storage.open_storage(tmp_path / "m.db", clock=clock) as store:
        await store.write(seed_project)
        epoch = store.node_epoch
        digest = digest_json({"title": "t"})

        def preview(actor: str = "actor_local_user") -> storage.WriteFn[storage.IssuedPreview]:
            return lambda c: storage.issue_preview(
                c,
                actor_id=actor,
                operation_id="session.create",
                input_digest=digest,
                clock=clock,
                node_epoch=epoch,
                ttl_ms=30_000,
            )

        def confirm(
            issued: storage.IssuedPreview,
            command: str,
            *,
            proof: str | None = None,
            input_digest: str = digest,
        ) -> storage.WriteFn[storage.MutationResult]:
            key = storage.MutationKey("actor_local_user", "session.create", command)
            return lambda c: storage.run_mutation(
                c,
                key=key,
                input_digest=input_digest,
                now_ms=clock.wall_ms(),
                apply=create_session_apply(session_row(), 0),
                confirmation=storage.Confirmation(issued.preview_id, proof or issued.proof),
                clock=clock,
                node_epoch=epoch,
            )

        async def refused(fn: storage.WriteFn[object], code: str) -> None:
            before = await store.read(_snapshot)
            with pytest.raises(MaiaError) as caught:
                await store.write(fn)
            assert caught.value.code == code
            assert await store.read(_snapshot) == before

        issued = await store.write(preview())
        stored = await store.read(
            lambda c: c.execute("SELECT proof_hash FROM previews").fetchone()[0]
        )
        assert issued.proof not in stored
        await refused(confirm(issued, "c0", proof="wrong-proof"), "preview_mismatch")
        await refused(confirm(issued, "c0", input_digest=digest_json({})), "preview_mismatch")
        done = await store.write(confirm(issued, "c1"))
        assert done.delivery == "new"
        # The same command again is a duplicate, not a second spend.
        assert (await store.write(confirm(issued, "c1"))).delivery == "duplicate"
        await refused(confirm(issued, "c2"), "proof_spent")
        key = storage.MutationKey("actor_local_user", "session.create", "c3")
        await refused(
            lambda c: storage.run_mutation(
                c,
                key=key,
                input_digest=digest,
                now_ms=0,
                apply=create_session_apply(session_row(), 0),
                confirmation=storage.Confirmation(None, None),
                clock=clock,
                node_epoch=epoch,
            ),
            "confirmation_required",
        )
        other_actor = await store.write(preview("actor_someone_else"))
        await refused(confirm(other_actor, "c4"), "preview_mismatch")
        late = await store.write(preview())
        clock.advance(30_000)
        await refused(confirm(late, "c5"), "preview_expired")
        pending = await store.write(preview())
    async with storage.open_storage(tmp_path / "m.db", clock=clock) as store:
        before = await store.read(_snapshot)
        with pytest.raises(MaiaError) as restarted:
            await store.write(
                lambda c: storage.consume_preview(
                    c,
                    preview_id=pending.preview_id,
                    proof=pending.proof,
                    actor_id="actor_local_user",
                    operation_id="session.create",
                    input_digest=digest,
                    command_id="c6",
                    clock=clock,
                    node_epoch=store.node_epoch,
                )
            )
        assert restarted.value.code == "preview_expired"
        assert await store.read(_snapshot) == before


_RECEIPT_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": [
        "schemaVersion",
        "receiptId",
        "commandId",
        "operationId",
        "actorId",
        "normalizedInputDigest",
        "outcome",
        "targets",
        "eventIds",
        "effectIds",
        "evidenceDigest",
        "createdAt",
    ],
    "properties": {
        "schemaVersion": {"const": "maia.receipt.v1"},
        "receiptId": {"type": "string"},
        "commandId": {"type": "string"},
        "operationId": {"type": "string"},
        "actorId": {"type": "string"},
        "projectId": {"type": "string"},
        "normalizedInputDigest": {"type": "string", "pattern": "^sha256:[0-9a-f]{64}$"},
        "outcome": {"enum": ["applied", "rejected", "reconciled", "outcome-unknown"]},
        "targets": {
            "type": "array",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["targetType", "targetId", "disposition"],
                "properties": {
                    "targetType": {"type": "string"},
                    "targetId": {"type": "string"},
                    "priorRevision": {"type": "integer"},
                    "resultRevision": {"type": "integer"},
                    "disposition": {"type": "string"},
                },
            },
        },
        "eventIds": {"type": "array", "items": {"type": "string"}},
        "effectIds": {"type": "array", "items": {"type": "string"}},
        "evidenceDigest": {"type": "string", "pattern": "^sha256:[0-9a-f]{64}$"},
        "createdAt": {"type": "string"},
    },
}


async def test_receipt_with_several_targets_lists_under_each(tmp_path: Path) -> None:
    """A receipt naming two targets is found by either target id."""
    async with storage.open_storage(tmp_path / "m.db", clock=FakeClock()) as store:
        targets = (
            storage.ReceiptTarget("session", "session_one", "updated", 1, 2),
            storage.ReceiptTarget("turn", "turn_two", "created", None, 1),
        )
        key = storage.MutationKey("actor_local_user", "turn.send", "cmd-t")
        done = await store.write(
            lambda c: storage.run_mutation(
                c,
                key=key,
                input_digest=digest_json({}),
                now_ms=1,
                apply=lambda _: storage.Applied({"ok": True}, targets),
            )
        )
        for target in ("session_one", "turn_two"):
            found = await store.read(functools.partial(storage.list_receipts, target_id=target))
            assert [r.receipt_id for r in found] == [done.receipt.receipt_id]
            assert found[0].targets == targets
        assert await store.read(lambda c: storage.list_receipts(c, target_id="nobody")) == ()


def _seeded(path: Path) -> sqlite3.Connection:
    """An autocommit connection to a new database at `path`, migrated, with the test project."""
    conn = sqlite3.connect(path, isolation_level=None)
    storage_migrate(conn, path)
    seed_project(conn)
    return conn


def _nested_receipt(conn: sqlite3.Connection, command: str) -> storage.MutationResult:
    """A receipt written from inside another mutation's apply (a mutation of another key)."""
    inner = session_row()
    return storage.run_mutation(
        conn,
        key=storage.MutationKey("actor_local_user", "session.create", command),
        input_digest=digest_json({"c": command}),
        now_ms=5,
        apply=create_session_apply(inner, 5),
    )


def test_a_receipt_written_by_apply_takes_the_guessed_sequence_and_the_next_is_used(
    tmp_path: Path,
) -> None:
    """run_mutation guesses its receipt's sequence at the key look-up; an apply that writes a
    receipt of its own takes it, so the outer receipt gets the next one: both are stored,
    read back by ID, and in order."""
    conn = _seeded(tmp_path / "m.db")
    first = _nested_receipt(conn, "cmd-0")
    inner: list[storage.MutationResult] = []
    row = session_row()
    base = create_session_apply(row, 10)

    def apply(c: sqlite3.Connection) -> storage.Applied:
        inner.append(_nested_receipt(c, "cmd-inner"))
        return base(c)

    outer = storage.run_mutation(
        conn, key=KEY, input_digest=digest_json({"title": "t"}), now_ms=10, apply=apply
    )
    sequences = [first.receipt.sequence, inner[0].receipt.sequence, outer.receipt.sequence]
    assert sequences == [1, 2, 3]
    for made in (first, inner[0], outer):
        assert storage.get_receipt(conn, made.receipt.receipt_id) == made.receipt
    assert [r.command_id for r in storage.list_receipts(conn)] == ["cmd-0", "cmd-inner", "cmd-1"]
    assert [r.command_id for r in storage.list_receipts(conn, target_id=row.session_id)] == [
        "cmd-1"
    ]
    conn.close()


def _claim_beside_a_nested_receipt(
    conn: sqlite3.Connection, *, claim_first: bool
) -> tuple[str, list[int | None], storage.MutationResult]:
    """A session.create whose apply claims its receipt target and writes another key's
    receipt, the claim first or after that receipt: (its Session ID, what the claim gave,
    the mutation's result)."""
    row = session_row()
    base = create_session_apply(row, 10)
    claims: list[int | None] = []

    def apply(c: sqlite3.Connection) -> storage.Applied:
        if claim_first:
            claims.append(storage.claim_receipt_target(c, row.session_id))
        _nested_receipt(c, "cmd-inner")
        if not claim_first:
            claims.append(storage.claim_receipt_target(c, row.session_id))
        return base(c)

    outer = storage.run_mutation(
        conn, key=KEY, input_digest=digest_json({"title": "t"}), now_ms=10, apply=apply
    )
    return row.session_id, claims, outer


def _assert_indexed_by_its_first_target(conn: sqlite3.Connection, session_id: str) -> None:
    """The outer receipt (sequence 2) keeps its first target; a list by it finds only it."""
    stored = conn.execute("SELECT target_id FROM receipts WHERE sequence = 2").fetchone()
    assert stored == (session_id,)
    assert [r.command_id for r in storage.list_receipts(conn, target_id=session_id)] == ["cmd-1"]


def test_a_claim_taken_by_a_later_receipt_leaves_the_target_indexed(tmp_path: Path) -> None:
    """A row that claimed the receipt's sequence, then a receipt written by apply after the
    claim: the outer receipt gets the next sequence and keeps its first target indexed, so a
    list by that target still finds it (and only it)."""
    conn = _seeded(tmp_path / "m.db")
    session_id, claims, outer = _claim_beside_a_nested_receipt(conn, claim_first=True)
    assert claims == [1]
    assert outer.receipt.sequence == 2
    _assert_indexed_by_its_first_target(conn, session_id)
    conn.close()


def test_a_claim_after_a_receipt_of_apply_is_stale_and_the_receipt_stays_indexed(
    tmp_path: Path,
) -> None:
    """A claim takes the key look-up's guess without reading the receipts again: after a
    receipt apply wrote first, that guess is taken, so the outer receipt gets the next
    sequence with its first target indexed, and a list by that target finds it only."""
    conn = _seeded(tmp_path / "m.db")
    session_id, claims, outer = _claim_beside_a_nested_receipt(conn, claim_first=False)
    assert claims == [1]  # the guess, already the inner receipt's
    assert outer.receipt.sequence == 2
    _assert_indexed_by_its_first_target(conn, session_id)
    assert storage.get_receipt(conn, outer.receipt.receipt_id) == outer.receipt
    conn.close()


async def test_a_proof_never_begins_with_a_dash(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The CLI takes a proof as a positional word, which click would read as an option if it
    began with '-' (one base64url draw in 64): such a draw is replaced by the next, and the
    proof it gives is the one the confirm accepts."""
    import secrets

    draws = iter(["-Lfirst" + "a" * 36, "Bsecond" + "b" * 36])
    monkeypatch.setattr(secrets, "token_urlsafe", lambda n: next(draws))
    clock = FakeClock()
    digest = digest_json({"title": "t"})
    async with storage.open_storage(tmp_path / "m.db", clock=clock) as store:
        epoch = store.node_epoch
        await store.write(seed_project)

        def preview(conn: sqlite3.Connection) -> storage.IssuedPreview:
            return storage.issue_preview(conn, actor_id="actor_local_user",
                                         operation_id="session.create", input_digest=digest,
                                         clock=clock, node_epoch=epoch, ttl_ms=30_000)  # fmt: skip

        issued = await store.write(preview)
        monkeypatch.undo()  # the confirm and everything after draw for real
        assert issued.proof == "Bsecond" + "b" * 36
        key = storage.MutationKey("actor_local_user", "session.create", "cmd-dash")
        spend = storage.Confirmation(issued.preview_id, issued.proof)

        def confirm(conn: sqlite3.Connection) -> storage.MutationResult:
            apply = create_session_apply(session_row(), 10)
            return storage.run_mutation(conn, key=key, input_digest=digest, now_ms=10,
                                        apply=apply, confirmation=spend, clock=clock,
                                        node_epoch=epoch)  # fmt: skip

        done = await store.write(confirm)
    assert done.delivery == "new"
