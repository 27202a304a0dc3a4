"""Property: under random interleavings, each idempotency key executes exactly once."""

from __future__ import annotations

import sqlite3
import tempfile
from pathlib import Path

import trio
from hypothesis import given, settings
from hypothesis import strategies as st

import storage
from maia.core import FakeClock, MaiaError, digest_json, new_id

KEYS = [
    storage.MutationKey(actor, "session.rename", command)
    for actor in ("actor_a", "actor_b")
    for command in ("cmd-1", "cmd-2")
]
INPUTS = [{"title": "one"}, {"title": "two"}, {"title": "three"}]

calls = st.tuples(st.integers(0, len(KEYS) - 1), st.integers(0, len(INPUTS) - 1))
# Each wave's calls are submitted concurrently, so duplicates meet in one group-commit batch.
waves = st.lists(st.lists(calls, min_size=1, max_size=8), min_size=1, max_size=6)


def _mutation(key_index: int, input_index: int) -> storage.WriteFn[storage.MutationResult]:
    key = KEYS[key_index]

    def apply(conn: sqlite3.Connection) -> storage.Applied:
        conn.execute(
            "INSERT INTO counters (name, value) VALUES (?, 1)"
            " ON CONFLICT (name) DO UPDATE SET value = value + 1",
            (f"exec:{key_index}",),
        )
        target = storage.ReceiptTarget("session", f"session_{key_index}", "updated", 1, 2)
        # A fresh token per execution: a duplicate that re-ran would show another one.
        return storage.Applied({"input": input_index, "token": new_id("effect")}, (target,))

    return lambda conn: storage.run_mutation(
        conn, key=key, input_digest=digest_json(INPUTS[input_index]), now_ms=1, apply=apply
    )


@settings(max_examples=40)
@given(plan=waves)
async def test_each_key_runs_once_duplicates_match_conflicts_detected(
    plan: list[list[tuple[int, int]]],
) -> None:
    """One execution and one receipt per key; duplicates identical; other input conflicts."""
    outcomes: list[tuple[int, int, storage.MutationResult | MaiaError]] = []
    with tempfile.TemporaryDirectory() as directory:
        async with storage.open_storage(Path(directory) / "m.db", clock=FakeClock()) as store:

            async def call(key_index: int, input_index: int) -> None:
                try:
                    result = await store.write(_mutation(key_index, input_index))
                except MaiaError as error:
                    outcomes.append((key_index, input_index, error))
                else:
                    outcomes.append((key_index, input_index, result))

            with trio.fail_after(30):
                for wave in plan:
                    async with trio.open_nursery() as nursery:
                        for key_index, input_index in wave:
                            nursery.start_soon(call, key_index, input_index)

            def facts(conn: sqlite3.Connection) -> tuple[dict[str, int], dict[str, int]]:
                executions = dict(
                    conn.execute("SELECT name, value FROM counters WHERE name LIKE 'exec:%'")
                )
                receipts = dict(
                    conn.execute(
                        "SELECT actor_id || '/' || command_id, count(*) FROM receipts"
                        " GROUP BY actor_id, command_id"
                    )
                )
                return executions, receipts

            executions, receipts = await store.read(facts)

    used = {key_index for key_index, _, _ in outcomes}
    assert executions == {f"exec:{k}": 1 for k in used}
    assert receipts == {f"{KEYS[k].actor_id}/{KEYS[k].command_id}": 1 for k in used}
    for key_index in used:
        mine = [(i, o) for k, i, o in outcomes if k == key_index]
        successes = [(i, o) for i, o in mine if isinstance(o, storage.MutationResult)]
        assert [o.delivery for _, o in successes].count("new") == 1
        winner = next(o for _, o in successes if o.delivery == "new")
        won_input = winner.result["input"]
        for input_index, result in mine:
            if input_index == won_input:
                assert isinstance(result, storage.MutationResult)
                assert result.result == winner.result
                assert result.receipt == winner.receipt
            else:
                assert isinstance(result, MaiaError)
                assert result.code == "idempotency_conflict"
