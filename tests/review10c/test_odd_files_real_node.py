"""Odd user files against a real Node through the CLI: a symlink to /dev/zero, a FIFO, a
folder, bytes that are not UTF-8, a file over 1 MiB, nesting 100 deep, a repeated key.
Each `maia config admit --yes` is refused `configuration_invalid` naming the file and the
path (`$`, or the repeated key), node.status lists the file as invalid, and the Node goes
on running on what was admitted before (nothing changed)."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.maia.cli._node import Cli, running_node

ADMITTED = '{"swarm": {"capacity": {"maxLiveSessions": 7}}}'


def _text(text: str) -> Callable[[Path], None]:
    def make(path: Path) -> None:
        path.write_text(text)
        os.chmod(path, 0o600)

    return make


def _bytes(data: bytes) -> Callable[[Path], None]:
    def make(path: Path) -> None:
        path.write_bytes(data)
        os.chmod(path, 0o600)

    return make


ODD: list[tuple[str, Callable[[Path], None], str]] = [
    ("symlink", lambda p: p.symlink_to("/dev/zero"), "$"),
    ("fifo", lambda p: os.mkfifo(p, 0o600), "$"),
    ("folder", lambda p: p.mkdir(mode=0o700), "$"),
    ("latin-1", _bytes(b'{"swarm": {"defaultTimezone": "\xe9"}}'), "$"),
    ("huge", _text('{"x": "' + "a" * (1 << 20) + '"}'), "$"),
    ("deep", _text("[" * 100 + "]" * 100), "[0]" * 65),
    ("repeated", _text('{"swarm": {}, "swarm": {}}'), "swarm"),
]


@pytest.fixture(scope="module")
def cli(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cli]:
    """A real Node whose user file was admitted once (maxLiveSessions 7)."""
    with running_node(tmp_path_factory.mktemp("odd"), ADMITTED) as cli:
        os.chmod(cli.home / "config.jsonc", 0o600)
        assert cli("config", "admit", "--yes").returncode == 0
        yield cli


@pytest.mark.parametrize(("name", "make", "path"), ODD, ids=[o[0] for o in ODD])
def test_an_odd_file_is_refused_and_changes_nothing(
    cli: Cli, name: str, make: Callable[[Path], None], path: str
) -> None:
    """configuration_invalid naming the file and the path; invalid in node.status; the
    admitted limit still in effect."""
    file = cli.home / "config.jsonc"
    file.unlink()
    make(file)
    refused = cli("config", "admit", "--yes", "--json")
    assert refused.returncode == 1, refused.stdout
    error = json.loads(refused.stdout)["error"]
    assert error["code"] == "configuration_invalid"
    assert (error["details"]["source"], error["details"]["path"]) == (str(file), path)
    status = json.loads(cli("node", "status", "--json").stdout)["result"]
    (user,) = [f for f in status["configFiles"] if f["scope"] == "user"]
    assert (user["file"], user["revision"]) == ("invalid", 1)
    shown = json.loads(cli("config", "show", "--json").stdout)["result"]
    limit = shown["effective"]["swarm.capacity"]["maxLiveSessions"]
    assert limit == {"value": 7, "source": "user"}
    if file.is_dir() and not file.is_symlink():
        file.rmdir()
    else:
        file.unlink()
    _text(ADMITTED)(file)
