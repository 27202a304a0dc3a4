"""Project roots and the inventory mirror (`~/.maia/projects.jsonc`, UserProjectInventoryV1).

Storage is the source of truth for Projects; the file is a mirror the Node rewrites after
each change, so a person can read (not edit) what the Node knows. Editing it never moves a
Project (spec: a move is a relocation mutation).

A root is canonical the spec's way: its parent is resolved (symlinks followed) and its final
component is not followed, so a symlink is refused rather than silently replaced by its
target; the root and its parent must belong to the current user and not be group- or
world-writable (a root others can write is a root others can plant files in).
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import Final, Literal

import attrs
import orjson

from maia.core import MaiaError

PROJECT_KEY_RE: Final = re.compile(r"^[a-z][a-z0-9-]{1,63}$")
_HEADER: Final = (
    "// Maia's Project inventory (UserProjectInventoryV1), mirrored by the Node from its\n"
    "// storage after every change. Do not edit: `maia project add` changes it.\n"
)


@attrs.frozen
class ProjectRoot:
    """A checked, canonical Project root."""

    path: str
    workspace_kind: Literal["repository", "directory"]


def _refuse(root: str, why: str) -> MaiaError:
    return MaiaError(
        "configuration_invalid",
        f"configuration is invalid: rootPath {root}: {why}",
        {"detail": f"rootPath {why}", "path": "rootPath", "rootPath": root},
    )


def _check_owned(path: Path, what: str, root: str) -> os.stat_result:
    info = path.lstat()
    if info.st_uid != os.getuid():
        raise _refuse(root, f"{what} {path} belongs to another user")
    if info.st_mode & 0o022 and not (what == "parent" and info.st_mode & stat.S_ISVTX):
        raise _refuse(root, f"{what} {path} is writable by group or others")
    return info


def canonical_root(root: str) -> ProjectRoot:
    """Check and canonicalize a Project root.

    Raises `validation_failed` for a relative path, `configuration_invalid` when it does not
    exist, is not a directory, is a symlink, or fails the ownership checks.
    """
    if not root.startswith("/"):
        raise MaiaError(
            "validation_failed", "rootPath: must be an absolute path", {"path": "rootPath"}
        )
    given = Path(root)
    name = given.name
    parent = Path(os.path.realpath(given.parent)) if name else Path("/")
    candidate = parent / name if name else parent
    try:
        if candidate == Path("/"):
            raise _refuse(root, "the file system root cannot be a Project")
        if candidate.is_symlink():
            raise _refuse(root, "is a symbolic link; give the directory it points to")
        if not candidate.is_dir():
            raise _refuse(root, "does not exist or is not a directory")
        _check_owned(candidate, "directory", root)
        _check_owned(parent, "parent", root)
    except OSError as error:
        raise _refuse(root, f"cannot be inspected ({error.strerror})") from error
    kind: Literal["repository", "directory"] = (
        "repository" if (candidate / ".git").exists() else "directory"
    )
    return ProjectRoot(str(candidate), kind)


def default_project_key(root: str, taken: Iterable[str]) -> str:
    """A key from the directory name (`My App` → `my-app`), suffixed until unused."""
    base = re.sub(r"[^a-z0-9-]+", "-", Path(root).name.lower()).strip("-")
    if not base or not base[0].isalpha():
        base = f"p-{base}" if base else "project"
    base = base[:56].rstrip("-")
    if len(base) < 2:
        base = f"{base}-project"
    used = set(taken)
    key, number = base, 2
    while key in used:
        key = f"{base}-{number}"
        number += 1
    return key


@attrs.frozen
class InventoryEntry:
    """ProjectInventoryEntryV1."""

    project_id: str
    project_key: str
    root_path: str
    workspace_kind: str

    def to_json(self) -> dict[str, str]:
        return {
            "projectId": self.project_id,
            "projectKey": self.project_key,
            "rootPath": self.root_path,
            "workspaceKind": self.workspace_kind,
        }


def render_inventory(entries: Iterable[InventoryEntry]) -> bytes:
    """The mirror file's bytes: a header comment and the entries as a JSON list."""
    body = orjson.dumps([e.to_json() for e in entries], option=orjson.OPT_INDENT_2)
    return _HEADER.encode() + body + b"\n"


def write_inventory(path: Path, entries: Iterable[InventoryEntry]) -> None:
    """Atomically replace the mirror at `path` (0600). Raises OSError when it cannot."""
    data = render_inventory(entries)
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC, 0o600)
    try:
        os.write(fd, data)
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(temporary, path)
