"""Storage actor throughput: a representative mutation with 1, 16 and 64 trio callers.

The mutation is what a Session transition writes: a Session row, its event (gap-free owner
sequence + journal position), and the receipt that is also the idempotency key, all through
`run_mutation` in one `Storage.write`; the callers take the inputs interleaved, so the
requests of a batch carry consecutive IDs. Measured in the same run: the naive way (one
BEGIN IMMEDIATE..COMMIT per mutation on one connection, same pragmas) and the raw limit
(`executemany` of the same rows in one transaction). synchronous=FULL everywhere. Input
digests are computed before timing (the API layer's cost, ~30 µs each).

Also: reads (get a Session by id) through the read-only pool vs through the writer, which
docs/storage.md uses to justify where reads go.
"""

from __future__ import annotations

import functools
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

if __package__ in (None, ""):
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import orjson
import trio

import storage
from bench._report import Report, log, median_of_rounds, parse_args
from maia.core import SystemClock, digest_json

PROJECT_ID = "project_00000000000000000000000000000001"
_serial = 0


def _seed(conn: sqlite3.Connection) -> None:
    storage.insert_project(
        conn, storage.ProjectRow(PROJECT_ID, "bench", "/tmp/bench", "Bench", 1, 0, 0)
    )


def _session(session_id: str) -> storage.SessionRow:
    return storage.SessionRow(
        session_id,
        PROJECT_ID,
        "echo",
        "bench",
        {"k": "v"},
        "/tmp/bench",
        "idle",
        "stopped",
        1,
        0,
        0,
        False,
        None,
        None,
        None,
        None,
    )


def _inputs(n: int) -> list[tuple[storage.MutationKey, str, storage.SessionRow]]:
    """n distinct session.create commands with their digests, made before timing."""
    global _serial
    made = []
    for _ in range(n):
        _serial += 1
        command = f"cmd-{_serial}"
        row = _session(storage.new_ordered_id("session"))
        digest = digest_json({"title": "bench", "commandId": command})
        made.append((storage.MutationKey("actor_bench", "session.create", command), digest, row))
    return made


def _mutation(
    key: storage.MutationKey, digest: str, row: storage.SessionRow
) -> Callable[[sqlite3.Connection], storage.MutationResult]:
    def apply(conn: sqlite3.Connection) -> storage.Applied:
        storage.insert_session(conn, row)
        event = storage.append_event(
            conn,
            owner_id=row.session_id,
            event_type="session.created",
            payload={"title": row.title},
            now_ms=1,
            aggregate_revision=1,
            project_id=PROJECT_ID,
            session_id=row.session_id,
        )
        return storage.Applied(
            {"sessionId": row.session_id, "revision": 1},
            (storage.ReceiptTarget("session", row.session_id, "created", None, 1),),
            (event.event_id,),
            project_id=PROJECT_ID,
        )

    return lambda conn: storage.run_mutation(
        conn, key=key, input_digest=digest, now_ms=1, apply=apply
    )


def actor_rate(
    path: Path,
    callers: int,
    total: int,
    replayable: bool = False,
    cpu: list[float] | None = None,
    writer_cpu: list[float] | None = None,
) -> float:
    """Mutations per second through the storage actor with `callers` concurrent tasks
    (`replayable`: submitted with `write(..., replayable=True)`); appends the process CPU
    per mutation in µs to `cpu`, and the writer thread's to `writer_cpu`."""
    work = _inputs(total)
    share = total // callers

    async def main() -> float:
        async with storage.open_storage(path, clock=SystemClock()) as store:
            # Interleaved shares: the requests in flight at any moment are consecutive
            # inputs, as when each caller makes its IDs at submit time; contiguous shares
            # had 64 batch neighbours 64 ID ranges apart, so every ID-keyed index got one
            # leaf page per request (3.5 WAL frames per mutation instead of ~1), a cost
            # the raw run, inserting in ID order, never paid.
            async def caller(index: int) -> None:
                for key, digest, row in work[index::callers][:share]:
                    await store.write(_mutation(key, digest, row), replayable=replayable)

            started = time.perf_counter()
            cpu_started = time.process_time()
            writer_started = store.writer_cpu_s()
            async with trio.open_nursery() as nursery:
                for index in range(callers):
                    nursery.start_soon(caller, index)
            elapsed = time.perf_counter() - started
            if cpu is not None:
                cpu.append((time.process_time() - cpu_started) / (share * callers) * 1e6)
            if writer_cpu is not None:
                writer_cpu.append((store.writer_cpu_s() - writer_started) / (share * callers) * 1e6)
            stats = store.statistics()
            log(
                f"  c{callers}: mean batch {stats.mean_batch_size:.1f}, "
                f"commit p50 {stats.commit_latency_p50_ms:.2f} ms"
            )
            return share * callers / elapsed

    return trio.run(main)


def _connect(path: Path) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute("PRAGMA synchronous = FULL")
    conn.execute("PRAGMA foreign_keys = ON")
    # 64 MiB, the actor's old cache (it now keeps 1 MiB by default): naive and raw are never
    # handicapped by a smaller cache than the actor's, so a ratio cannot gain from it.
    conn.execute("PRAGMA cache_size = -65536")
    conn.execute("PRAGMA temp_store = MEMORY")
    return conn


def naive_rate(path: Path, total: int) -> float:
    """One transaction per mutation on one connection: the same mutation, no group commit."""
    work = _inputs(total)
    conn = _connect(path)
    try:
        started = time.perf_counter()
        for key, digest, row in work:
            conn.execute("BEGIN IMMEDIATE")
            _mutation(key, digest, row)(conn)
            conn.execute("COMMIT")
        return total / (time.perf_counter() - started)
    finally:
        conn.close()


def raw_rate(path: Path, total: int, cpu: list[float] | None = None) -> float:
    """The limit: executemany of the same rows (session, event, receipt) in one transaction;
    appends its process CPU per mutation in µs to `cpu`."""
    sessions, owners, events, receipts = [], [], [], []
    conn = _connect(path)
    # The same IDs as the actor's rows: an event's carries its position, a receipt's its
    # sequence (`storage.positioned_id`), so neither goes into the index of older IDs; each
    # new Session is a new journal owner, numbered in `event_owners` as `append_event` does.
    position, sequence, owner_no = conn.execute(
        "SELECT (SELECT coalesce(max(position), 0) FROM events),"
        " (SELECT coalesce(max(sequence), 0) FROM receipts),"
        " (SELECT coalesce(max(owner_no), 0) FROM event_owners)"
    ).fetchone()
    for i, (key, digest, row) in enumerate(_inputs(total)):
        sessions.append(
            (
                row.session_id,
                PROJECT_ID,
                "echo",
                "bench",
                '{"k":"v"}',
                "/tmp/bench",
                "idle",
                "stopped",
                1,
                0,
                0,
            )
        )
        position, sequence, owner_no = position + 1, sequence + 1, owner_no + 1
        owners.append((owner_no, row.session_id))
        event_id = storage.positioned_id("event", position)
        events.append(
            (
                position,
                event_id,
                "session.created",
                "session",
                row.session_id,
                1,
                1,
                PROJECT_ID,
                "",  # session_stored: the owner's ID, as append_event stores it
                "operator",
                1,
                orjson.dumps({"title": "bench"}).decode(),
                owner_no,
            )
        )
        receipt_id = storage.positioned_id("receipt", sequence)
        receipts.append(
            (
                sequence,
                receipt_id,
                key.actor_id,
                key.operation_id,
                key.command_id,
                PROJECT_ID,
                digest,
                "applied",
                "[]",
                f'["{event_id}"]',
                "[]",
                digest,
                "{}",
                1,
                row.session_id,
            )
        )
        del i
    try:
        started = time.perf_counter()
        cpu_started = time.process_time()
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(
            "INSERT INTO sessions (session_id, project_id, executor, title, labels, cwd, state,"
            " activity, revision, created_ms, updated_ms) VALUES (?,?,?,?,?,?,?,?,?,?,?)",
            sessions,
        )
        conn.executemany("INSERT INTO event_owners (owner_no, owner_id) VALUES (?, ?)", owners)
        conn.executemany(
            "INSERT INTO events (position, event_id, event_type, owner_type, owner_id,"
            " owner_seq, aggregate_revision, project_id, session_stored, classification,"
            " occurred_ms, payload, owner_no) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?)",
            events,
        )
        conn.executemany(
            "INSERT INTO receipts (sequence, receipt_id, actor_id, operation_id, command_id,"
            " project_id, input_digest, outcome, targets, event_ids, effect_ids,"
            " evidence_digest, result, created_ms, target_id)"
            " VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
            receipts,
        )
        conn.execute("COMMIT")
        if cpu is not None:
            cpu.append((time.process_time() - cpu_started) / total * 1e6)
        return total / (time.perf_counter() - started)
    finally:
        conn.close()


def read_rates(path: Path, callers: int, total: int) -> dict[str, float]:
    """Session reads per second through the read-only pool and through the writer, alone and
    beside 64 writing callers (with the write rate each choice leaves)."""
    figures: dict[str, float] = {}

    async def main() -> None:
        async with storage.open_storage(path, clock=SystemClock()) as store:
            ids = await store.read(
                lambda c: [r[0] for r in c.execute("SELECT session_id FROM sessions LIMIT 500")]
            )
            share = total // callers
            for mode in ("pool", "writer"):
                via: Callable[..., Any] = store.write if mode == "writer" else store.read

                async def reader(index: int, via: Callable[..., Any] = via) -> None:
                    for n in range(share):
                        sid = ids[(index * share + n) % len(ids)]
                        await via(functools.partial(storage.get_session, session_id=sid))

                started = time.perf_counter()
                async with trio.open_nursery() as nursery:
                    for index in range(callers):
                        nursery.start_soon(reader, index)
                figures[f"reads_per_s_{mode}_c{callers}"] = total / (time.perf_counter() - started)
                # The same reads while 64 callers write: what each choice costs the writes.
                work = _inputs(64 * 40)
                writes_done = time.perf_counter()

                async def writer(index: int, work: list[Any] = work) -> None:
                    nonlocal writes_done
                    for key, digest, row in work[index::64]:
                        await store.write(_mutation(key, digest, row))
                    writes_done = time.perf_counter()

                started = time.perf_counter()
                async with trio.open_nursery() as nursery:
                    for index in range(64):
                        nursery.start_soon(writer, index)
                    reads_started = time.perf_counter()
                    async with trio.open_nursery() as readers:
                        for index in range(callers):
                            readers.start_soon(reader, index)
                    figures[f"reads_per_s_{mode}_c{callers}_beside_writes"] = total / (
                        time.perf_counter() - reads_started
                    )
                figures[f"mutations_per_s_c64_beside_{mode}_reads"] = len(work) / (
                    writes_done - started
                )

    trio.run(main)
    return figures


def main() -> None:
    args = parse_args(__doc__ or "storage benchmark")
    # --quick: under 30 s on 2 cores (fewer rounds, half-size rounds); the shape is the same.
    rounds = 2 if args.quick else 5
    scale = 1 if args.quick else 6
    report = Report("storage")
    with tempfile.TemporaryDirectory() as directory:
        root = Path(directory)
        db = root / "bench.db"

        async def seed() -> None:
            async with storage.open_storage(db, clock=SystemClock()) as store:
                await store.write(_seed)

        trio.run(seed)
        for callers, total in ((1, 150 * scale), (16, 2000 * scale), (64, 3200 * scale)):
            log(f"actor with {callers} callers")
            cpu: list[float] = []
            writer: list[float] = []
            report.figures[f"mutations_per_s_c{callers}"] = median_of_rounds(
                rounds,
                functools.partial(actor_rate, db, callers, total, cpu=cpu, writer_cpu=writer),
            )
            report.figures[f"cpu_us_per_mutation_c{callers}"] = statistics.median(cpu)
            report.figures[f"writer_cpu_us_per_mutation_c{callers}"] = statistics.median(writer)
        log("actor with 64 callers, replayable writes (no savepoint each)")
        cpu = []
        report.figures["mutations_per_s_c64_replayable"] = median_of_rounds(
            rounds, functools.partial(actor_rate, db, 64, 3200 * scale, True, cpu)
        )
        report.figures["cpu_us_per_mutation_c64_replayable"] = statistics.median(cpu)
        log("naive")
        report.figures["naive_mutations_per_s"] = median_of_rounds(
            rounds, lambda: naive_rate(db, 150 * scale)
        )
        log("raw")
        cpu = []
        report.figures["raw_rows_per_s"] = median_of_rounds(
            rounds, lambda: raw_rate(db, 3200 * scale, cpu)
        )
        report.figures["cpu_us_per_mutation_raw"] = statistics.median(cpu)
        log("reads")
        report.figures.update(read_rates(db, 16, 1024 * scale))
    c64 = report.figures["mutations_per_s_c64"]
    report.ratios["vs_naive_c64"] = c64 / report.figures["naive_mutations_per_s"]
    report.ratios["vs_raw_c64"] = c64 / report.figures["raw_rows_per_s"]
    # The same comparison in CPU (raw's CPU per mutation / the actor's): steadier than the
    # rates, which swing with fsync on a shared disk (raw's one commit writes megabytes).
    report.ratios["cpu_vs_raw_c64"] = (
        report.figures["cpu_us_per_mutation_raw"] / report.figures["cpu_us_per_mutation_c64"]
    )
    replayable = report.figures["mutations_per_s_c64_replayable"]
    report.ratios["vs_naive_c64_replayable"] = replayable / report.figures["naive_mutations_per_s"]
    report.ratios["vs_raw_c64_replayable"] = replayable / report.figures["raw_rows_per_s"]
    report.notes = (
        "mutation = session row + event (its owner numbered) + receipt (= idempotency key, "
        "first target indexed), synchronous=FULL, WAL; raw_rows_per_s counts mutations' "
        "worth of rows (3 rows each, and the owner's number) per second via executemany in "
        "one transaction; IDs of events and receipts positioned, of Sessions "
        f"time-ordered (new_ordered_id); load average at the end {os.getloadavg()[0]:.1f} "
        f"on {os.cpu_count()} CPUs"
    )
    report.emit(args.json)


if __name__ == "__main__":
    main()
