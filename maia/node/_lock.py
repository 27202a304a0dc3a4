"""One Node per home: an exclusive `fcntl` lock on `node.lock`, held for the Node's life.

The kernel drops the lock when the process dies, however it dies, so a crashed Node never
blocks the next start. A second start that finds the lock held names the holder from the
discovery file (or, before that is written, from the pid the holder put in the lock file).
"""

from __future__ import annotations

import fcntl
import os
from types import TracebackType

from maia.core import MaiaError, read_discovery

from ._files import cannot_write, open_private
from ._home import NodeHome


class NodeLock:
    """The exclusive lock of one home. Use as a context manager."""

    def __init__(self, home: NodeHome) -> None:
        self._home = home
        self._fd: int | None = None

    def acquire(self) -> None:
        """Take the lock without waiting.

        Raises `MaiaError(unavailable)` naming the holding Node when another process has it,
        or naming the lock file and the cause when it cannot be written (a full disk);
        `MaiaError(configuration_invalid)` when it is a symlink or not a regular file.
        """
        path = self._home.lock_path
        try:
            fd = open_private(path, os.O_RDWR | os.O_CREAT)  # no symlink, 0600
        except OSError as error:
            raise cannot_write(path, error) from error
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _read_pid(fd)
            os.close(fd)
            raise self._held_error(holder) from None
        except BaseException:
            os.close(fd)
            raise
        try:
            os.ftruncate(fd, 0)
            os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        except OSError as error:  # a full disk: say which file and why
            os.close(fd)
            raise cannot_write(path, error) from error
        self._fd = fd

    def release(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            fcntl.flock(fd, fcntl.LOCK_UN)
            os.close(fd)

    def _held_error(self, holder_pid: int | None) -> MaiaError:
        record = read_discovery(self._home.discovery_path)
        if record is not None and record.is_live():
            where = f"pid {record.pid} at {record.url}"
            details: dict[str, object] = {"pid": record.pid, "url": record.url}
        elif holder_pid is not None:
            where = f"pid {holder_pid} (still starting)"
            details = {"pid": holder_pid}
        else:
            where = "another process"
            details = {}
        return MaiaError(
            "unavailable",
            f"a Maia Node already runs on {self._home.root}: {where}",
            {"target": "node", "home": str(self._home.root), **details},
        )

    def __enter__(self) -> NodeLock:
        self.acquire()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.release()


def _read_pid(fd: int) -> int | None:
    try:
        text = os.pread(fd, 32, 0).decode("ascii").strip()
        return int(text) if text.isdigit() else None
    except (OSError, UnicodeDecodeError):
        return None
