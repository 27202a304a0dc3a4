"""Descriptor-first reading: symlinks at any step refused, owner and mode judged on the
opened descriptors, non-regular and oversized files refused, absence is not an error."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from maia.config import FileRefused, read_project_file, read_user_file
from maia.config._jsonc import MAX_BYTES


@pytest.fixture
def root(tmp_path: Path) -> Path:
    path = tmp_path / "app"
    path.mkdir(mode=0o700)
    return path


def test_absent_file_and_folder_read_as_no_file(root: Path) -> None:
    """No .maia folder, then no file in it: data is None, the digest says absent."""
    assert read_project_file(str(root)).data is None
    (root / ".maia").mkdir(mode=0o700)
    found = read_project_file(str(root))
    assert (found.data, found.digest) == (None, "absent")


def test_bytes_and_digest(root: Path) -> None:
    """The file's bytes are read and digested as sha256."""
    (root / ".maia").mkdir(mode=0o700)
    (root / ".maia" / "config.jsonc").write_bytes(b"{}")
    found = read_project_file(str(root))
    assert found.data == b"{}"
    assert found.digest.startswith("sha256:44136fa355b3678a")


@pytest.mark.parametrize("step", ["root", "folder", "file"])
def test_a_symlink_at_any_step_is_refused(tmp_path: Path, step: str) -> None:
    """The root, the .maia folder or the file as a symlink: refused, never followed."""
    real = tmp_path / "real"
    (real / ".maia").mkdir(parents=True, mode=0o700)
    (real / ".maia" / "config.jsonc").write_text("{}")
    os.chmod(real, 0o700)
    link = tmp_path / "link"
    if step == "root":
        link.symlink_to(real)
        target = link
    elif step == "folder":
        link.mkdir(mode=0o700)
        (link / ".maia").symlink_to(real / ".maia")
        target = link
    else:
        link.mkdir(mode=0o700)
        (link / ".maia").mkdir(mode=0o700)
        (link / ".maia" / "config.jsonc").symlink_to(real / ".maia" / "config.jsonc")
        target = link
    with pytest.raises(FileRefused) as caught:
        read_project_file(str(target))
    assert "symbolic link" in str(caught.value)


def test_group_writable_folder_is_refused(root: Path) -> None:
    """A .maia folder others can write is refused, naming its mode."""
    (root / ".maia").mkdir()
    os.chmod(root / ".maia", 0o770)
    with pytest.raises(FileRefused) as caught:
        read_project_file(str(root))
    assert "mode 0770" in str(caught.value)


def test_fifo_and_oversized_files_are_refused(root: Path) -> None:
    """A FIFO is not a regular file (opened without blocking); over 1 MiB is refused."""
    (root / ".maia").mkdir(mode=0o700)
    os.mkfifo(root / ".maia" / "config.jsonc", 0o600)
    with pytest.raises(FileRefused) as fifo:
        read_project_file(str(root))
    assert "not a regular file" in str(fifo.value)
    home = root / "home"
    home.mkdir(mode=0o700)
    (home / "config.jsonc").write_bytes(b" " * (MAX_BYTES + 1))
    os.chmod(home / "config.jsonc", 0o600)
    with pytest.raises(FileRefused) as big:
        read_user_file(str(home))
    assert "larger than" in str(big.value)
