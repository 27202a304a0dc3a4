"""Pages written, from SQLite's own count: the WAL frames a database's write-ahead log holds.

Every page a commit writes is one WAL frame. `wal_frames` reads `mxFrame` (the index of the
last valid frame) from the WAL-index header at the start of the `-shm` file, the field
SQLite's readers use (https://sqlite.org/walformat.html, "The WAL-Index Header"): a 48-byte
header stored twice, native byte order, mxFrame at offset 16; a reader takes it when both
copies agree. Reading it costs no transaction and changes nothing.

A checkpoint that restarts the log sets mxFrame back to 0, so `frames_during` reports None
for a span in which that happened (the caller drops that sample).

Where the pages go: `commits_in_wal` reads the frame headers of a span of the log (each names
its page; a commit's last frame carries the database size, https://sqlite.org/fileformat.html,
"WAL Frame Format") and `btree_of_pages` names each page's table or index from SQLite's
`dbstat` table. `python bench/_pages.py [--turns N] [--sessions S]` runs N turns in process
(one in flight, S Sessions made first, each given a few turns so the journal's indexes hold
several owners, as in `bench/turns.py`) and prints the frames per turn by B-tree, and each
commit of the last turn; with `--api`, through a real Node's API (`send_and_wait`), as
`bench/turns.py --api` measures `pages_per_turn_1`. With `--statements`, in process, the SQL
statements the writer runs per turn instead (`sqlite3`'s trace callback on the write
connection, literals folded): a trigger's program is traced again with its statement's text,
so a repeat in a row counts as a trigger program, not a statement.
"""

from __future__ import annotations

import collections
import itertools
import re
import sqlite3
import struct
import sys
from collections.abc import Awaitable, Callable
from pathlib import Path

_HEADER = 48
_MX_FRAME = 16
_WAL_HEADER = 32
_FRAME_HEADER = 24
_ENDIAN = "<" if sys.byteorder == "little" else ">"


def wal_frames(db: Path) -> int:
    """The frames in `db`'s write-ahead log now (0 before it has one)."""
    shm = Path(f"{db}-shm")
    for _ in range(100):  # bounded: a writer updates the two copies one after the other
        try:
            head = shm.read_bytes()[: 2 * _HEADER]
        except FileNotFoundError:
            return 0
        if len(head) < 2 * _HEADER:
            return 0
        if head[:_HEADER] == head[_HEADER:]:
            return int(struct.unpack_from(f"{_ENDIAN}I", head, _MX_FRAME)[0])
    raise RuntimeError(f"the WAL-index header of {db} kept changing")


async def frames_during(db: Path, work: Callable[[], Awaitable[object]]) -> int | None:
    """The WAL frames written while `work()` ran, or None when the log restarted meanwhile."""
    before = wal_frames(db)
    await work()
    after = wal_frames(db)
    return after - before if after >= before else None


def commits_in_wal(db: Path, start: int, end: int) -> list[list[int]]:
    """The page numbers of WAL frames `start`..`end` (0-based, end excluded), one list per
    commit in log order (a trailing partial commit is left out)."""
    data = Path(f"{db}-wal").read_bytes()
    page_size = struct.unpack_from(">I", data, 8)[0]
    commits: list[list[int]] = []
    pages: list[int] = []
    for index in range(start, end):
        offset = _WAL_HEADER + index * (_FRAME_HEADER + page_size)
        page, size_after_commit = struct.unpack_from(">II", data, offset)
        pages.append(page)
        if size_after_commit:
            commits.append(pages)
            pages = []
    return commits


def btree_of_pages(db: Path) -> dict[int, str]:
    """Each page of `db` (as its log has it now) named by its table or index."""
    conn = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
    try:
        return dict(conn.execute("SELECT pageno, name FROM dbstat").fetchall())
    finally:
        conn.close()


async def _trace(turns: int, sessions: int) -> None:
    import tempfile

    from bench.turns import Counter, _one_turn, _sessions
    from maia.config import UserConfig
    from maia.protocol import SystemClock
    from maia.service import open_services
    from storage import open_storage

    with tempfile.TemporaryDirectory() as folder:
        home = Path(folder)
        (home / "project").mkdir()
        db, ids = home / "maia.db", Counter()
        async with (
            open_storage(db, clock=SystemClock()) as store,
            open_services(store, clock=SystemClock(), home=home, config=UserConfig()) as ctx,
        ):
            made = await _sessions(ctx, home / "project", sessions, ids)
            for _ in range(4):
                for session_id in made:
                    await _one_turn(ctx, session_id, ids)
            # Start the span on an empty log: a checkpoint in it would restart the log.
            conn = sqlite3.connect(db)
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
            conn.close()
            before = wal_frames(db)
            for _ in range(turns):
                await _one_turn(ctx, made[-1], ids)
            after = wal_frames(db)
            if after >= before:
                commits, names = commits_in_wal(db, before, after), btree_of_pages(db)
    _print(turns, before, after, commits, names)


async def _trace_api(turns: int, sessions: int) -> None:
    """`_trace` over the API of a real Node (bench/turns.py --api's setup, shortened: the
    other Sessions 4 in flight x 3 turns, the traced one 50 turns first)."""
    import tempfile

    from bench._node import start_node
    from bench.turns import _api_run, _api_sessions
    from maia.client import open_client, send_and_wait

    with tempfile.TemporaryDirectory() as folder:
        home = Path(folder) / "home"
        node = start_node(home, "bench/_pages.py --api")
        try:
            made = await _api_sessions(home, sessions + 1)
            await _api_run(home, made[:-1], 4, 3)
            await _api_run(home, made[-1:], 1, 50)
            db = home / "maia.db"
            conn = sqlite3.connect(db)
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
            conn.close()
            async with open_client(home=home, timeout_s=60) as client:
                before = wal_frames(db)
                for _ in range(turns):
                    await send_and_wait(client, made[-1], "hi", timeout_s=60)
                after = wal_frames(db)
            if after >= before:
                commits, names = commits_in_wal(db, before, after), btree_of_pages(db)
        finally:
            node.terminate()
            node.wait(timeout=60)
    _print(turns, before, after, commits, names)


async def _statements(turns: int, sessions: int) -> None:
    """The writer's statements per turn over `turns` turns of one Session, one in flight."""
    import tempfile

    from bench.turns import Counter, _one_turn, _sessions
    from maia.config import UserConfig
    from maia.protocol import SystemClock
    from maia.service import open_services
    from storage import open_storage

    traced: list[str] = []
    with tempfile.TemporaryDirectory() as folder:
        home = Path(folder)
        (home / "project").mkdir()
        ids = Counter()
        async with (
            open_storage(home / "maia.db", clock=SystemClock()) as store,
            open_services(store, clock=SystemClock(), home=home, config=UserConfig()) as ctx,
        ):
            made = await _sessions(ctx, home / "project", sessions, ids)
            for _ in range(4):
                for session_id in made:
                    await _one_turn(ctx, session_id, ids)
            await store.write(lambda conn: conn.set_trace_callback(traced.append))
            traced.clear()
            for _ in range(turns):
                await _one_turn(ctx, made[-1], ids)
            await store.write(lambda conn: conn.set_trace_callback(None))
    traced = traced[:-1]  # the call that stops the trace
    statements = [text for text, _ in itertools.groupby(traced)]
    triggers = len(traced) - len(statements)
    print(f"{turns} turns: {len(statements) / turns:.2f} statements and "
          f"{triggers / turns:.2f} trigger programs per turn")  # fmt: skip
    folded = collections.Counter(_folded(text) for text in statements)
    for text, count in folded.most_common():
        print(f"{count / turns:6.2f}  {text}")


def _folded(statement: str) -> str:
    """`statement` with its literals as `?` and `N` (the trace gives it with values bound)."""
    text = re.sub(r"'(?:[^']|'')*'", "?", re.sub(r"\s+", " ", statement))
    return re.sub(r"\b\d+\b", "N", text)[:160]


def _print(turns: int, before: int, after: int, commits: list[list[int]],
           names: dict[int, str]) -> None:  # fmt: skip
    if after < before:
        raise SystemExit("a checkpoint restarted the log meanwhile: use fewer turns")
    total = collections.Counter(names.get(page, "?") for pages in commits for page in pages)
    print(f"{turns} turns: {(after - before) / turns:.2f} frames and "
          f"{len(commits) / turns:.2f} commits per turn")  # fmt: skip
    for name, frames in total.most_common():
        print(f"  {name:36} {frames / turns:6.2f}")
    per_turn = max(1, round(len(commits) / turns))
    for number, pages in enumerate(commits[-per_turn:], 1):
        spread = collections.Counter(names.get(page, "?") for page in pages)
        print(f"last turn, commit {number}: {len(pages)} frames: {dict(spread)}")


if __name__ == "__main__":
    import argparse

    import trio

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    parser = argparse.ArgumentParser(description="pages per turn by B-tree (in process)")
    parser.add_argument("--turns", type=int, default=20)
    parser.add_argument("--sessions", type=int, default=10)
    parser.add_argument("--api", action="store_true", help="through a real Node's API")
    parser.add_argument("--statements", action="store_true", help="the writer's SQL per turn")
    arguments = parser.parse_args()
    run = _statements if arguments.statements else _trace_api if arguments.api else _trace
    trio.run(run, arguments.turns, arguments.sessions)
