"""The event envelope on real SQLite: a command's correlation reaches its events and receipt,
contexts nest, explicit arguments win, roots are their own cause, and rows written before the
envelope migration read with defaults."""

from __future__ import annotations

import functools
import sqlite3
from pathlib import Path

import orjson

import storage
from maia.core import FakeClock, digest_json
from storage._schema import _EVENT_ENVELOPE

from ._fixtures import schema_before


def _emit(
    conn: sqlite3.Connection,
    owner: str = "session_a",
    *,
    causation_id: str | None = None,
    attempt_id: str | None = None,
) -> storage.EventRecord:
    return storage.append_event(
        conn, owner_id=owner, event_type="test.happened", payload={}, now_ms=5,
        causation_id=causation_id, attempt_id=attempt_id,
    )  # fmt: skip


async def test_a_commands_events_and_receipt_carry_its_correlation(tmp_path: Path) -> None:
    """Every event a mutation appends has the commandId as correlation, cause and command;
    the receipt stores it; a named correlation (a larger command's) replaces the default."""
    async with storage.open_storage(tmp_path / "m.db", clock=FakeClock()) as store:

        def apply(conn: sqlite3.Connection) -> storage.Applied:
            events = (_emit(conn), _emit(conn, "turn_b"))
            return storage.Applied({}, event_ids=tuple(e.event_id for e in events))

        def run(
            conn: sqlite3.Connection, command: str, correlation_id: str | None = None
        ) -> storage.MutationResult:
            key = storage.MutationKey("local-user", "turn.send", command)
            return storage.run_mutation(conn, key=key, input_digest=digest_json({}), now_ms=1,
                                        apply=apply, correlation_id=correlation_id)  # fmt: skip

        plain = await store.write(functools.partial(run, command="cmd-1"))
        named = await store.write(functools.partial(run, command="cmd-2", correlation_id="fire_1"))
        page = await store.read(lambda c: storage.read_events(c))
        by_id = {e.event_id: e for e in page.events}
        for event_id in plain.receipt.event_ids:
            event = by_id[event_id]
            assert (event.correlation_id, event.causation_id, event.command_id) == (
                "cmd-1", "cmd-1", "cmd-1")  # fmt: skip
            assert event.schema_version == "maia.event.v1"
            assert event.actor_id == "local-user"
        for event_id in named.receipt.event_ids:
            assert by_id[event_id].correlation_id == "fire_1"
            assert by_id[event_id].causation_id == "cmd-2"
        stored = await store.read(lambda c: storage.get_receipt(c, named.receipt.receipt_id))
        assert stored.correlation == "fire_1"
        assert plain.receipt.correlation == "cmd-1"
        found = await store.read(lambda c: storage.command_correlation(c, "nothing", "turn.send"))
        assert found is None


async def test_contexts_nest_and_explicit_arguments_win(tmp_path: Path) -> None:
    """An inheriting context keeps the outer fields it leaves unset; a replacing one drops
    them; an argument beats both; outside any context an event is its own root."""
    async with storage.open_storage(tmp_path / "m.db", clock=FakeClock()) as store:

        def write(conn: sqlite3.Connection) -> list[storage.EventRecord]:
            out = [_emit(conn)]
            outer = storage.Envelope("corr", "cause", attempt_id="attempt_1")
            with storage.event_context(outer):
                out.append(_emit(conn))
                with storage.event_context(storage.Envelope(activation_id="activation_1")):
                    out.append(_emit(conn))
                    out.append(_emit(conn, causation_id="mine"))
                with storage.event_context(storage.Envelope("other"), inherit=False):
                    out.append(_emit(conn))
            out.append(_emit(conn))
            return out

        root, inner, nested, explicit, replaced, after = await store.write(write)
        for alone in (root, after):
            assert alone.correlation_id == alone.causation_id == alone.event_id
            assert alone.attempt_id is None
        assert (inner.correlation_id, inner.causation_id, inner.attempt_id) == (
            "corr", "cause", "attempt_1")  # fmt: skip
        assert (nested.attempt_id, nested.activation_id) == ("attempt_1", "activation_1")
        assert explicit.causation_id == "mine"
        assert explicit.correlation_id == "corr"
        assert replaced.correlation_id == "other"
        assert replaced.attempt_id is None
        assert replaced.causation_id == replaced.event_id
        stored = await store.read(lambda c: storage.read_events(c).events)
        assert stored == (root, inner, nested, explicit, replaced, after)


def _old_database(path: Path) -> None:
    """A database as the Maia before the envelope migration left it, with one old event and
    one old receipt."""
    conn = sqlite3.connect(path, isolation_level=None)
    schema_before(conn, _EVENT_ENVELOPE)
    conn.execute(
        "INSERT INTO events (event_id, event_type, owner_type, owner_id, owner_seq,"
        " classification, occurred_ms, payload) VALUES ('event_old', 'session.created',"
        " 'session', 'session_old', 1, 'operator', 7, ?)",
        (orjson.dumps({"attemptId": "attempt_old"}).decode(),),
    )
    conn.execute(
        "INSERT INTO receipts (receipt_id, actor_id, operation_id, command_id, input_digest,"
        " outcome, targets, event_ids, effect_ids, evidence_digest, result, created_ms)"
        " VALUES ('receipt_old', 'local-user', 'session.create', 'cmd-old', 'sha256:x',"
        " 'applied', '[]', '[\"event_old\"]', '[]', 'sha256:y', '{}', 7)"
    )
    conn.close()


async def test_rows_from_before_the_migration_read_with_defaults(tmp_path: Path) -> None:
    """After the envelope migration an old event is v1, its own cause and correlation, with
    no attempt or activation column; an old receipt's correlation is its commandId; new
    events append after it with the envelope stored."""
    path = tmp_path / "old.db"
    _old_database(path)
    async with storage.open_storage(path, clock=FakeClock()) as store:
        old = (await store.read(lambda c: storage.read_events(c))).events[0]
        assert old.schema_version == "maia.event.v1"
        assert old.causation_id == old.correlation_id == "event_old"
        assert (old.attempt_id, old.activation_id, old.command_id) == (None, None, None)
        receipt = await store.read(lambda c: storage.get_receipt(c, "receipt_old"))
        assert receipt.correlation_id is None
        assert receipt.correlation == "cmd-old"

        def new(conn: sqlite3.Connection) -> storage.EventRecord:
            return _emit(conn, "session_old", attempt_id="attempt_new")

        appended = await store.write(new)
        assert appended.owner_sequence == 2
        assert (await store.read(lambda c: storage.read_events(c))).events[1] == appended
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == storage.SCHEMA_VERSION
    row = conn.execute("SELECT schema_version, attempt_id FROM events WHERE owner_seq = 2")
    assert row.fetchone() == ("maia.event.v1", "attempt_new")
    conn.close()
