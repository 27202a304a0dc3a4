"""docs/node.md's SDK promises run for real: its snippet, and "a method takes keyword fields
(Python names) … checks it locally" with the charter's rule that bad input gets a typed
error naming the field (the API itself names it: `details.path`)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio

from maia.client import MaiaError, open_client
from tests.maia.cli._node import Cli, running_node


@pytest.fixture(scope="module")
def cli(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cli]:
    with running_node(tmp_path_factory.mktemp("sdk_docs")) as started:
        made = started("session", "create", "--title", "docs", "--json")
        assert made.returncode == 0, made.stderr
        yield started


def _refusal(home: Path, **fields: Any) -> MaiaError:
    async def main() -> MaiaError:
        async with open_client(home=home) as client:
            with pytest.raises(MaiaError) as refused:
                await client.session.create(**fields)
            return refused.value

    return trio.run(main)


def test_the_pages_snippet_runs(cli: Cli) -> None:
    """node.md's snippet: status with storage ok, then a missing Session is resource_not_found."""

    async def main() -> tuple[str, str]:
        async with open_client(home=cli.home) as client:
            status = await client.node.status()
            try:
                await client.session.show(session_id="session_0123")
            except MaiaError as error:
                return status.storage.integrity, error.code
            raise AssertionError("session_0123 was found")

    assert trio.run(main) == ("ok", "resource_not_found")


def test_a_wrong_type_names_the_field(cli: Cli) -> None:
    """A keyword of the wrong type is validation_failed naming it (this one already holds)."""
    error = _refusal(cli.home, title=5, project_id="project_" + "0" * 32)
    assert (error.code, error.details.get("path")) == ("validation_failed", "title")


@pytest.mark.parametrize(
    ("fields", "path"),
    [({"title": "x"}, "projectId"), ({"title": "x", "project_idd": "p"}, "project_idd")],
)
def test_a_missing_or_unknown_keyword_names_the_field(
    cli: Cli, fields: dict[str, Any], path: str
) -> None:
    """A missing required keyword, or a misspelt one, is validation_failed naming the field."""
    error = _refusal(cli.home, **fields)
    assert error.code == "validation_failed"
    assert error.details.get("path") == path
