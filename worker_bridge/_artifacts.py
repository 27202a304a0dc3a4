"""Artifact references: a value too large for a frame travels as a content-addressed file.

The worker protocol bounds instruction and message content at 16 KiB; a larger prompt is
written once to `<home>/artifacts/sha256/<hex>` (0600 in 0700 folders, opened with
O_NOFOLLOW, a planted symlink refused) and the prompt frame names it:
`{"path": ..., "digest": "sha256:<hex>", "bytes": n}`. The reader (the worker SDK) opens it
the same way, refuses anything but a regular file of the announced size, and checks the
digest before the handler sees the text. Stdlib only: the worker SDK imports this.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import stat
import threading

MAX_ARTIFACT_BYTES = 64 * 1024 * 1024  # what a reader will load at most
_DIGEST_PREFIX = "sha256:"

# Node side: how many running turns hold each artifact file (one Node per home), so a
# turn's end removes a file only when no other turn still needs the same content.
_holders: dict[str, int] = {}
_holders_lock = threading.Lock()


class ArtifactError(Exception):
    """An artifact reference that cannot be read or checked (the message says why)."""


def _private_dir(path: str) -> None:
    os.makedirs(path, mode=0o700, exist_ok=True)
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode):
        raise ArtifactError(f"{path} is not a directory")
    if info.st_mode & 0o077:
        os.chmod(path, 0o700)


def write_artifact(home: str, data: bytes) -> dict[str, object]:
    """Store `data` under its digest in `home` and hold it for one turn; its reference.

    Release it with `release_artifact` when the turn ends."""
    hexdigest = hashlib.sha256(data).hexdigest()
    folder = os.path.join(home, "artifacts", "sha256")
    _private_dir(os.path.join(home, "artifacts"))
    _private_dir(folder)
    path = os.path.join(folder, hexdigest)
    with _holders_lock:
        if _holders.get(path, 0) == 0 or not os.path.exists(path):
            temp = f"{path}.{os.getpid()}.{threading.get_ident()}.tmp"
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
            fd = os.open(temp, flags, 0o600)
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
            finally:
                os.close(fd)
            os.replace(temp, path)  # a symlink planted at `path` is replaced, not followed
        _holders[path] = _holders.get(path, 0) + 1
    return {"path": path, "digest": _DIGEST_PREFIX + hexdigest, "bytes": len(data)}


def release_artifact(reference: dict[str, object]) -> None:
    """The turn holding `reference` ended: remove the file once no turn holds it."""
    path = str(reference["path"])
    with _holders_lock:
        left = _holders.get(path, 0) - 1
        if left > 0:
            _holders[path] = left
            return
        _holders.pop(path, None)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(path)


def check_reference(value: object) -> str | None:
    """The problem with an artifact reference's shape, or None (the frame schema's check)."""
    if not isinstance(value, dict) or set(value) != {"path", "digest", "bytes"}:
        return "must be an object with path, digest and bytes"
    path, digest, size = value["path"], value["digest"], value["bytes"]
    if not isinstance(path, str) or not path.startswith("/") or len(path) > 4096:
        return "path must be an absolute path"
    if not isinstance(digest, str) or not digest.startswith(_DIGEST_PREFIX):
        return "digest must be sha256:<hex>"
    hexpart = digest[len(_DIGEST_PREFIX) :]
    if len(hexpart) != 64 or any(c not in "0123456789abcdef" for c in hexpart):
        return "digest must be sha256: and 64 lowercase hex digits"
    if type(size) is not int or not 0 <= size <= MAX_ARTIFACT_BYTES:
        return f"bytes must be an integer in 0..{MAX_ARTIFACT_BYTES}"
    return None


def read_artifact(reference: dict[str, object]) -> bytes:
    """The bytes `reference` names, checked against its size and digest."""
    problem = check_reference(reference)
    if problem is not None:
        raise ArtifactError(f"artifact reference: {problem}")
    path, size = str(reference["path"]), int(reference["bytes"])  # type: ignore[call-overload]
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except OSError as error:
        raise ArtifactError(f"artifact {path}: {error.strerror}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size != size:
            raise ArtifactError(f"artifact {path}: not a regular file of {size} bytes")
        chunks, left = [], size + 1  # one byte more, to notice a file that grew
        while left > 0:
            chunk = os.read(fd, min(left, 1 << 20))
            if not chunk:
                break
            chunks.append(chunk)
            left -= len(chunk)
    finally:
        os.close(fd)
    data = b"".join(chunks)
    if (
        len(data) != size
        or _DIGEST_PREFIX + hashlib.sha256(data).hexdigest() != reference["digest"]
    ):
        raise ArtifactError(f"artifact {path}: content does not match its digest")
    return data
