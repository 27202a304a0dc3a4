"""Project roots and the inventory mirror (`~/.maia/projects.jsonc`, UserProjectInventoryV1).

Storage is the source of truth for Projects; the file is a mirror the Node rewrites after
each change, so a person can read (not edit) what the Node knows. Editing it never moves a
Project (spec: a move is a relocation mutation).

A root is canonical the spec's way: its parent is resolved (symlinks followed) and its final
component is not followed, so a symlink is refused rather than silently replaced by its
target; the root and its parent must belong to the current user and not be group- or
world-writable (a root others can write is a root others can plant files in), judged on
opened descriptors, with no exception for a sticky parent: a root directly in /tmp is
refused. A repository root carries its repository block (see `_repository`).
"""

from __future__ import annotations

import errno
import os
import re
from collections.abc import Iterable
from pathlib import Path
from typing import Any, Final, Literal

import attrs
import orjson

from maia.core import MaiaError

from ._files import trust_problem
from ._repository import Repository, read_repository

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
    repository: Repository | None = None


def _refuse(root: str, why: str) -> MaiaError:
    return MaiaError(
        "configuration_invalid",
        f"configuration is invalid: rootPath {root}: {why}",
        {"detail": f"rootPath {why}", "path": "rootPath", "rootPath": root},
    )


def _checked(info: os.stat_result, what: str, shown: Path, root: str) -> None:
    problem = trust_problem(info, f"{what} {shown}")
    if problem is not None:
        raise _refuse(root, problem)


def canonical_root(root: str) -> ProjectRoot:
    """Check and canonicalize a Project root, descriptor-first: the parent (its symlinks
    resolved) is opened, the root is opened beneath it without following a final symlink,
    and owner and mode are judged on both descriptors (no exception for a sticky parent
    such as /tmp). A repository root gets its repository block from its own files.

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
    if candidate == Path("/"):
        raise _refuse(root, "the file system root cannot be a Project")
    try:
        parent_fd = os.open(parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError as error:
        raise _refuse(root, f"its parent cannot be opened ({error.strerror})") from error
    try:
        try:
            root_fd = os.open(name, os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC,
                              dir_fd=parent_fd)  # fmt: skip
        except OSError as error:
            if os.path.islink(candidate):
                why = "is a symbolic link; give the directory it points to"
                raise _refuse(root, why) from error
            if error.errno in (errno.ENOENT, errno.ENOTDIR):
                raise _refuse(root, "does not exist or is not a directory") from error
            raise _refuse(root, f"cannot be opened ({error.strerror})") from error
        try:
            _checked(os.fstat(root_fd), "directory", candidate, root)
            _checked(os.fstat(parent_fd), "parent", parent, root)
        finally:
            os.close(root_fd)
    finally:
        os.close(parent_fd)
    repository = read_repository(candidate)
    kind: Literal["repository", "directory"] = "repository" if repository else "directory"
    return ProjectRoot(str(candidate), kind, repository)


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
    repository: Repository | None = None

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "projectId": self.project_id,
            "projectKey": self.project_key,
            "rootPath": self.root_path,
            "workspaceKind": self.workspace_kind,
        }
        if self.repository is not None:
            out["repository"] = self.repository.to_json()
        return out


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
