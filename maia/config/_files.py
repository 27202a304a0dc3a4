"""Reading a configuration file descriptor-first (spec: Resolution and admission).

Each directory on the way is opened with `O_DIRECTORY | O_NOFOLLOW` relative to the one
before it, and the file itself with `O_NOFOLLOW`, so a symlink planted at any of those steps
is refused rather than followed, and the checks below are made on the opened descriptors
(`fstat`), not on a path that could be swapped between the check and the read. Every
directory and the file must belong to the current user and be writable by no one else; a
sticky shared folder gets no exception. The bytes read are the candidate: their digest binds
a preview, and a confirm that reads other bytes is refused.
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
from collections.abc import Sequence
from typing import Final

import attrs

from ._jsonc import MAX_BYTES
from ._problems import Problem

_DIR_FLAGS: Final = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FILE_FLAGS: Final = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
ABSENT_DIGEST: Final = "absent"


class FileRefused(Exception):
    """The file (or a directory on its way) cannot be trusted or read; `problem` says why."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(str(problem))
        self.problem = problem


@attrs.frozen
class ConfigFile:
    """A configuration file as read from its descriptor (`data` None: there is no file)."""

    path: str
    data: bytes | None

    @property
    def digest(self) -> str:
        if self.data is None:
            return ABSENT_DIGEST
        return "sha256:" + hashlib.sha256(self.data).hexdigest()

    def text(self) -> str | None:
        """The file's text. Raises FileRefused when it is not UTF-8."""
        if self.data is None:
            return None
        try:
            return self.data.decode("utf-8")
        except UnicodeDecodeError as error:
            raise FileRefused(Problem(self.path, "$", f"is not UTF-8 ({error.reason})")) from error


def trust_problem(info: os.stat_result, what: str) -> str | None:
    """Why a descriptor's owner or mode cannot be trusted, or None."""
    if info.st_uid != os.getuid():
        return f"{what} belongs to another user (uid {info.st_uid})"
    if info.st_mode & 0o022:
        sticky = " (a shared sticky folder such as /tmp is not private either)" if (
            info.st_mode & stat.S_ISVTX) else ""  # fmt: skip
        remedy = ("use a folder only you can write" if stat.S_ISDIR(info.st_mode)
                  else "make it writable only by you (chmod go-w)")  # fmt: skip
        return (
            f"{what} is writable by group or others (mode {stat.S_IMODE(info.st_mode):04o})"
            f"{sticky}; {remedy}"
        )
    return None


def _open(name: str, flags: int, dir_fd: int | None, shown: str) -> int | None:
    """Open one step; None when it does not exist. Raises FileRefused."""
    try:
        return os.open(name, flags, dir_fd=dir_fd)
    except FileNotFoundError:
        return None
    except OSError as error:
        if error.errno == errno.ELOOP or (error.errno == errno.ENOTDIR and flags & os.O_DIRECTORY
                                          and os.path.islink(shown)):  # fmt: skip
            raise FileRefused(Problem(shown, "$", "is a symbolic link (not followed)")) from error
        if error.errno == errno.ENOTDIR:
            raise FileRefused(Problem(shown, "$", "is not a directory")) from error
        raise FileRefused(Problem(shown, "$", f"cannot be opened ({error.strerror})")) from error


def read_beneath(base: str, steps: Sequence[str], name: str) -> ConfigFile:
    """Read `base/steps.../name` descriptor-first (see the module docstring).

    `base` itself is opened without following a final symlink and checked too. A missing
    step or file gives `data=None`. Raises FileRefused naming the path and the reason.
    """
    shown = base
    fds: list[int] = []
    try:
        fd = _open(base, _DIR_FLAGS, None, shown)
        for step in (*steps, None):
            if fd is None:
                return ConfigFile(os.path.join(base, *steps, name), None)
            fds.append(fd)
            problem = trust_problem(os.fstat(fd), "the folder")
            if problem is not None:
                raise FileRefused(Problem(shown, "$", problem))
            if step is None:
                break
            shown = os.path.join(shown, step)
            fd = _open(step, _DIR_FLAGS, fd, shown)
        shown = os.path.join(shown, name)
        file_fd = _open(name, _FILE_FLAGS, fds[-1], shown)
        if file_fd is None:
            return ConfigFile(shown, None)
        fds.append(file_fd)
        info = os.fstat(file_fd)
        if not stat.S_ISREG(info.st_mode):
            raise FileRefused(Problem(shown, "$", "is not a regular file"))
        problem = trust_problem(info, "the file")
        if problem is not None:
            raise FileRefused(Problem(shown, "$", problem))
        return ConfigFile(shown, _read_bounded(file_fd, shown))
    finally:
        for opened in fds:
            os.close(opened)


def _read_bounded(fd: int, shown: str) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        try:
            chunk = os.read(fd, 65_536)
        except OSError as error:  # a failing disk: a problem with the file, not a crash
            raise FileRefused(Problem(shown, "$", f"cannot be read ({error.strerror})")) from error
        if not chunk:
            break
        size += len(chunk)
        if size > MAX_BYTES:
            raise FileRefused(Problem(shown, "$", f"is larger than {MAX_BYTES} bytes"))
        chunks.append(chunk)
    return b"".join(chunks)


def read_user_file(home: str) -> ConfigFile:
    """`<home>/config.jsonc`. The home's own symlinks are resolved first (a home may be a
    link to another disk); the file is never followed. Raises FileRefused."""
    return read_beneath(os.path.realpath(home), (), "config.jsonc")


def read_project_file(root: str) -> ConfigFile:
    """`<root>/.maia/config.jsonc`. Raises FileRefused, also when the root itself is gone:
    a Project without a file has no configuration, but a Project whose root went away (moved,
    an unmounted disk) is not one, and admitting it so would drop what is admitted."""
    file = read_beneath(root, (".maia",), "config.jsonc")
    if file.data is None and not os.path.lexists(root):
        raise FileRefused(Problem(root, "$", "the Project's root does not exist: if it moved, "
                                  "tell the Node (maia project relocate)"))  # fmt: skip
    return file
