"""Project roots: canonical, existing, owned, not symlinks; keys; the inventory mirror."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from maia.config import (
    InventoryEntry,
    canonical_root,
    default_project_key,
    loads_jsonc,
    write_inventory,
)
from maia.core import MaiaError


def test_root_is_canonicalized_through_parent_symlinks(tmp_path: Path) -> None:
    """A parent symlink is resolved; `..` segments disappear; a .git makes a repository."""
    real = tmp_path / "real"
    (real / "app" / ".git").mkdir(parents=True)
    (tmp_path / "link").symlink_to(real)
    root = canonical_root(str(tmp_path / "link" / "app"))
    assert root.path == str(real / "app")
    assert root.workspace_kind == "repository"
    again = canonical_root(str(real / "app" / ".." / "app"))
    assert again.path == str(real / "app")


@pytest.mark.parametrize("case", ["missing", "file", "symlink", "group-writable", "relative"])
def test_bad_roots_are_refused(tmp_path: Path, case: str) -> None:
    """Missing, a file, a final symlink, a group-writable dir, a relative path: refused."""
    target = tmp_path / "p"
    if case == "file":
        target.write_text("x")
    elif case == "symlink":
        (tmp_path / "real").mkdir()
        target.symlink_to(tmp_path / "real")
    elif case == "group-writable":
        target.mkdir()
        os.chmod(target, 0o775)
    text = "p" if case == "relative" else str(target)
    with pytest.raises(MaiaError) as caught:
        canonical_root(text)
    expected = "validation_failed" if case == "relative" else "configuration_invalid"
    assert caught.value.code == expected


def test_default_keys_match_the_pattern_and_avoid_collisions() -> None:
    """Directory names become keys matching ^[a-z][a-z0-9-]{1,63}$, suffixed when taken."""
    assert default_project_key("/x/My App", []) == "my-app"
    assert default_project_key("/x/my-app", ["my-app"]) == "my-app-2"
    assert default_project_key("/x/9lives", []) == "p-9lives"
    assert default_project_key("/x/_", []) == "project"


def test_inventory_mirror_is_jsonc_and_private(tmp_path: Path) -> None:
    """The mirror parses as JSONC into the entries, and is written 0600."""
    path = tmp_path / "projects.jsonc"
    entry = InventoryEntry("project_1", "app", "/srv/app", "directory")
    write_inventory(path, [entry])
    assert loads_jsonc(path.read_text()) == [entry.to_json()]
    assert path.stat().st_mode & 0o777 == 0o600
