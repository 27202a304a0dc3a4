"""Review (s7-review2): the CLI's references against a real Node. The spec (Identifier and
reference grammar) lets a resource argument be a *unique* ID prefix or a *unique* Session
title, and an ambiguous one fails listing the candidates; docs/cli.md: "When it names more
than one thing, the command exits 2 and lists the candidates"."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.maia.cli._node import Cli, running_node


@pytest.fixture(scope="module")
def cli(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cli]:
    with running_node(tmp_path_factory.mktemp("refs")) as node:
        yield node


def created(cli: Cli, *args: str) -> str:
    done = cli("session", "create", *args, "--json")
    assert done.returncode == 0, done.stderr
    return str(json.loads(done.stdout)["result"]["session"]["sessionId"])


def test_a_title_that_is_another_sessions_id_prefix_is_ambiguous(cli: Cli) -> None:
    """Session B titled with the first 8 hex digits of Session A's ID: `session show` of
    that text names two Sessions, so it exits 2 listing both, and acts on neither."""
    first = created(cli)
    word = first.removeprefix("session_")[:8]
    second = created(cli, "--title", word)
    shown = cli("session", "show", word, "--json")
    assert shown.returncode == 2, shown.stdout
    assert first in shown.stderr
    assert second in shown.stderr


def test_a_unique_title_and_a_unique_prefix_each_name_their_session(
    cli: Cli, tmp_path: Path
) -> None:
    """A title no ID begins with names its Session; 4+ hex digits of an ID name that one."""
    titled = created(cli, "--title", "review-refs-title")
    by_title = cli("session", "show", "review-refs-title", "--json")
    assert by_title.returncode == 0, by_title.stderr
    assert json.loads(by_title.stdout)["result"]["session"]["sessionId"] == titled
    prefix = titled.removeprefix("session_")[:12]
    by_prefix = cli("session", "show", prefix, "--json")
    assert by_prefix.returncode == 0, by_prefix.stderr
    assert json.loads(by_prefix.stdout)["result"]["session"]["sessionId"] == titled
