"""Opening the files of the home safely: owner-only, never through a planted symlink.

Anyone who can write in the home (or did before it was tightened) could leave `node.lock`
or `node.log` as a symlink to a file of the user's, which the Node would then truncate,
chmod or append to. So every file the Node writes in its home is opened with `O_NOFOLLOW`
(a symlink fails with `ELOOP`) and refused unless it is a regular file, and is created and
kept 0600 whatever the umask. At start the home's known files are checked the same way and
any that are wider than 0600 are tightened (`secure_home_files`); `maia.db` is created 0600
before SQLite first opens it, since SQLite gives its `-wal` and `-shm` files the mode of
the database file.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from maia.core import MaiaError

PRIVATE_MODE = 0o600
# Every file the Node, the CLI or the console keeps in a home.
HOME_FILES = (
    "maia.db",
    "maia.db-wal",
    "maia.db-shm",
    "config.jsonc",
    "console_history",
    "node.lock",
    "node.log",
    "node.json",
    "node.token",
)


def _unsafe(path: Path, what: str) -> MaiaError:
    return MaiaError(
        "configuration_invalid",
        f"configuration is invalid: {path} is {what}; the Node only uses regular files in "
        "its home (remove it and start again)",
        {"path": str(path)},
    )


def cannot_write(path: Path, error: OSError) -> MaiaError:
    """The error of a home file that could not be written (a full disk names itself)."""
    return MaiaError(
        "unavailable",
        f"the Node's home is unavailable: cannot write {path}: {error.strerror or error}",
        {"target": "home", "path": str(path)},
    )


def open_private(path: Path, flags: int) -> int:
    """`os.open(path, flags)` for a file of the home: created 0600, never a symlink, always
    a regular file, and 0600 however it was before. Returns the descriptor.

    Raises `MaiaError(configuration_invalid)` for a symlink or a non-regular file, `OSError`
    for the rest (permissions, a full disk).
    """
    try:
        fd = os.open(path, flags | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK, PRIVATE_MODE)
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise _unsafe(path, "a symbolic link") from None
        raise
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise _unsafe(path, "not a regular file")
        if info.st_mode & 0o777 != PRIVATE_MODE:
            os.fchmod(fd, PRIVATE_MODE)
        # O_NONBLOCK only kept a planted FIFO from blocking the open: drop it.
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def secure_home_files(root: Path) -> None:
    """Refuse a symlink or non-regular file among the home's files; tighten the rest to
    0600; create `maia.db` 0600 if it does not exist yet.

    Raises `MaiaError(configuration_invalid)` naming the file, or `OSError`.
    """
    for name in HOME_FILES:
        path = root / name
        try:
            info = path.lstat()
        except FileNotFoundError:
            continue
        if stat.S_ISLNK(info.st_mode):
            raise _unsafe(path, "a symbolic link")
        if not stat.S_ISREG(info.st_mode):
            raise _unsafe(path, "not a regular file")
        if info.st_mode & 0o777 != PRIVATE_MODE:
            os.chmod(path, PRIVATE_MODE)
    os.close(open_private(root / "maia.db", os.O_RDWR | os.O_CREAT))
