"""The identity adapters for None and bytes (storage/_binding.py): values bind as before."""

from __future__ import annotations

import sqlite3

import storage  # registers them
from storage._binding import fast_bindings_registered


def test_none_and_bytes_bind_as_before_and_the_direct_types_stay_direct() -> None:
    """With storage imported, None binds as NULL and bytes as the same BLOB, bytes
    subclasses and other values adapt as before, and no adapter names a type sqlite3 binds
    directly (one would switch its fast path off for every parameter)."""
    assert storage.open_storage is not None
    assert fast_bindings_registered()

    class Blob(bytes):
        pass

    conn = sqlite3.connect(":memory:")
    try:
        row = conn.execute(
            "SELECT typeof(?), ?, typeof(?), ?, typeof(?), ?",
            (None, None, b"\x00ab", b"\x00ab", Blob(b"x"), memoryview(b"yz")),
        ).fetchone()
    finally:
        conn.close()
    assert row == ("null", None, "blob", b"\x00ab", "blob", b"yz")
    direct = {int, float, str, bytearray}
    assert not {kind for kind, _ in sqlite3.adapters} & direct
