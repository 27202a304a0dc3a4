"""The documented item bound, enforced while streaming: an item keeps at most
`MAX_ITEM_TEXT_LENGTH` (262,144) characters; the rest goes to an artifact.

The overflow of a streaming item is appended to `<home>/artifacts/spill/<itemId>` (0600 in
0700 folders, O_NOFOLLOW) as it arrives, hashed on the way, so the Node holds at most the
bound in memory however long the output; when the item completes the file is renamed to
its content address `<home>/artifacts/sha256/<hex>` and the item is stored truncated,
naming it. Turns are never pruned today, so the artifact is kept with its turn.
"""

from __future__ import annotations

import hashlib
import os
import stat

from maia.core._limits import MAX_ITEM_TEXT_LENGTH


def _private_dir(path: str) -> None:
    os.makedirs(path, mode=0o700, exist_ok=True)
    if not stat.S_ISDIR(os.lstat(path).st_mode):
        raise OSError(f"{path} is not a directory")


class Spill:
    """The part of one item's text past the bound, on disk."""

    def __init__(self, home: str, item_id: str) -> None:
        self.home = home
        folder = os.path.join(home, "artifacts", "spill")
        _private_dir(os.path.join(home, "artifacts"))
        _private_dir(folder)
        self.path = os.path.join(folder, item_id)
        flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | os.O_CLOEXEC
        self._fd: int | None = os.open(self.path, flags, 0o600)
        self._hash = hashlib.sha256()
        self.chars = 0

    def write(self, text: str) -> None:
        if self._fd is None:
            return
        data = text.encode("utf-8", "surrogatepass")
        self._hash.update(data)
        self.chars += len(text)
        view = memoryview(data)
        while view:
            view = view[os.write(self._fd, view) :]

    def finish(self) -> str:
        """Close and move the file to its content address; that path."""
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None
            folder = os.path.join(self.home, "artifacts", "sha256")
            _private_dir(folder)
            final = os.path.join(folder, self._hash.hexdigest())
            os.replace(self.path, final)
            self.path = final
        return self.path


def bound_text(item: object, text: str, store_path: object) -> None:
    """Append `text` to a streaming item (an `OpenItem`), spilling past the bound into the
    home of the database at `store_path`."""
    held: str = item.text  # type: ignore[attr-defined]
    spill: Spill | None = item.spill  # type: ignore[attr-defined]
    if spill is None and len(held) + len(text) <= MAX_ITEM_TEXT_LENGTH:
        item.text = held + text  # type: ignore[attr-defined]
        return
    room = max(0, MAX_ITEM_TEXT_LENGTH - len(held))
    if room:
        item.text = held + text[:room]  # type: ignore[attr-defined]
    if spill is None:
        home = os.path.dirname(os.path.realpath(str(store_path)))
        spill = item.spill = Spill(home, item.item_id)  # type: ignore[attr-defined]
    spill.write(text[room:])
