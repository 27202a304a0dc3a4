"""A configuration file whose read fails (an I/O error on a failing disk) is a problem named
by its file, like one that cannot be opened: `os.read` raised out of the descriptor-first
reader, so `user_candidate` (documented never to raise) and with it config check, preview
and node.status failed with a bare OSError. The read error is injected (a real one needs a
failing disk); the file and folders are real. And a group-writable *file* is told to
`chmod go-w`, not to "use a folder only you can write"."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from maia.config import user_candidate


def test_a_read_error_is_a_problem(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """EIO while reading: one problem at `$` naming the file and the error."""
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    (home / "config.jsonc").write_text("{}")
    os.chmod(home / "config.jsonc", 0o600)

    def failing_read(fd: int, size: int) -> bytes:
        raise OSError(errno.EIO, os.strerror(errno.EIO))

    monkeypatch.setattr(os, "read", failing_read)  # the reader calls os.read
    candidate = user_candidate(str(home))
    (problem,) = candidate.problems
    assert (problem.source, problem.path) == (str(home / "config.jsonc"), "$")
    assert "cannot be read" in problem.message
    assert os.strerror(errno.EIO) in problem.message


def test_a_group_writable_file_is_told_to_chmod(tmp_path: Path) -> None:
    """A file writable by its group is told `chmod go-w`, not to "use a folder"."""
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    (home / "config.jsonc").write_text("{}")
    os.chmod(home / "config.jsonc", 0o620)
    (problem,) = user_candidate(str(home)).problems
    assert problem.message.endswith("make it writable only by you (chmod go-w)")
    assert "folder" not in problem.message
