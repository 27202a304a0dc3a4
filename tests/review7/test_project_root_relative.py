"""`maia project add PATH` and `maia project relocate preview|confirm PROJECT PATH` take a
relative PATH against the current directory, as every command that names a folder does
(`maia project add .`); before, it went to the Node as written and was refused with
`rootPath: must match ^/`. An absolute path is sent as it is (no symlink resolved: the
Node checks the path it is given)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from maia.cli import parse_invocation


@pytest.mark.parametrize(
    ("argv", "typed"),
    [
        (["project", "add"], "."),
        (["project", "add"], "sub/app"),
        (["project", "relocate", "preview", "app"], "../moved"),
        (["project", "relocate", "confirm", "app"], "moved"),
    ],
)
def test_a_relative_root_is_made_absolute(
    argv: list[str], typed: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The path is joined to the current directory and normalized."""
    monkeypatch.chdir(tmp_path)
    params = parse_invocation([*argv, typed]).params
    assert params["rootPath"] == os.path.normpath(os.path.join(str(tmp_path), typed))


def test_an_absolute_root_is_sent_as_typed(tmp_path: Path) -> None:
    """An absolute path is not rewritten."""
    root = str(tmp_path / "app") + "/"
    assert parse_invocation(["project", "add", root]).params["rootPath"] == root
