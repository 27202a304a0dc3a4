"""`maia node backup PATH`: a consistent copy of the Node's database, running or not.

SQLite's online backup API reads a snapshot through its own read-only connection; in WAL
mode that never blocks the running Node's writer, and the copy holds every transaction
committed before the backup began (the WAL included), in one self-contained file. The copy
holds all of the home's data, so it is created owner-only (0600) and never over an
existing file.
"""

from __future__ import annotations

import os
import sqlite3
from pathlib import Path

from maia.core import MaiaError

from ._files import open_private


def backup_database(source: Path, target: Path) -> int:
    """Copy the database `source` to the new file `target`; returns the copy's size.

    Raises `MaiaError`: resource_not_found (no database), invalid_request (target exists
    or is not writable), unavailable (SQLite failed, e.g. a full disk).
    """
    if not source.is_file():
        raise MaiaError("resource_not_found", f"there is no database at {source}",
                        {"resource": "database", "id": str(source)})  # fmt: skip
    try:
        os.close(open_private(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL))
    except FileExistsError:
        detail = f"{target} exists; a backup never replaces a file"
        raise MaiaError("invalid_request", f"the request is malformed: {detail}",
                        {"path": str(target)}) from None  # fmt: skip
    except OSError as error:
        detail = f"cannot create {target}: {error.strerror}"
        raise MaiaError("invalid_request", f"the request is malformed: {detail}",
                        {"path": str(target)}) from None  # fmt: skip
    try:
        reader = sqlite3.connect(f"file:{source}?mode=ro", uri=True)
        try:
            copy = sqlite3.connect(target)
            try:
                reader.backup(copy)
                copy.execute("PRAGMA journal_mode = DELETE")  # one file, no -wal beside it
            finally:
                copy.close()
        finally:
            reader.close()
    except sqlite3.Error as error:
        target.unlink(missing_ok=True)
        raise MaiaError("unavailable", f"storage is unavailable: the backup of {source} "
                        f"failed: {error}", {"target": "storage"}) from error  # fmt: skip
    return target.stat().st_size
