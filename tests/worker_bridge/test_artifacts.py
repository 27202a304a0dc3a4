"""Artifact references (worker protocol: larger values become artifact references): written
0600 in 0700 folders without following planted links, read back only when the digest and
size match, removed when the last turn holding them ends."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from worker_bridge import ArtifactError, read_artifact, release_artifact, write_artifact
from worker_bridge._artifacts import check_reference


def test_a_written_artifact_reads_back_and_goes_with_its_last_holder(tmp_path: Path) -> None:
    """The file is content-addressed, 0600 in 0700 folders; two holders, one file, removed
    at the second release."""
    data = "é".encode() * 20_000
    first = write_artifact(str(tmp_path), data)
    second = write_artifact(str(tmp_path), data)
    assert first == second
    assert check_reference(first) is None
    path = Path(str(first["path"]))
    assert path.parent == tmp_path / "artifacts" / "sha256"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert read_artifact(first) == data
    release_artifact(first)
    assert path.exists()
    release_artifact(second)
    assert not path.exists()


def test_a_tampered_or_linked_artifact_is_refused(tmp_path: Path) -> None:
    """Changed content fails the digest; a symlink in its place is not followed; a bad
    reference names what is wrong."""
    reference = write_artifact(str(tmp_path), b"x" * 20_000)
    path = Path(str(reference["path"]))
    path.write_bytes(b"y" * 20_000)
    with pytest.raises(ArtifactError, match="does not match its digest"):
        read_artifact(reference)
    target = tmp_path / "elsewhere"
    target.write_bytes(b"x" * 20_000)
    path.unlink()
    os.symlink(target, path)
    with pytest.raises(ArtifactError, match=str(path)):
        read_artifact(reference)
    assert "digest" in str(check_reference({**reference, "digest": "md5:00"}))
    with pytest.raises(ArtifactError, match="artifact reference"):
        read_artifact({"path": "relative", "digest": reference["digest"], "bytes": 1})


def test_a_planted_symlink_is_replaced_not_written_through(tmp_path: Path) -> None:
    """A symlink planted at the artifact's name is replaced; its target is untouched."""
    data = b"z" * 20_000
    folder = tmp_path / "artifacts" / "sha256"
    import hashlib

    folder.mkdir(parents=True)
    victim = tmp_path / "victim"
    victim.write_bytes(b"keep")
    os.symlink(victim, folder / hashlib.sha256(data).hexdigest())
    reference = write_artifact(str(tmp_path), data)
    assert victim.read_bytes() == b"keep"
    assert read_artifact(reference) == data
    release_artifact(reference)
