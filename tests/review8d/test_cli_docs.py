"""docs/cli.md's promises run for real against a Node: the exit codes of `turn wait`, the
usage error's `details.path`, and values a human is told to copy (a digest) printed whole.
Each xfail names the departure; the passing tests are the page's commands as written."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.maia.cli._node import Cli, running_node

DIGEST = re.compile(r"sha256:[0-9a-f]{64}")


@pytest.fixture(scope="module")
def cli(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cli]:
    with running_node(tmp_path_factory.mktemp("cli_docs")) as started:
        made = started("session", "create", "--title", "docs", "--json")
        assert made.returncode == 0, made.stderr
        yield started


def _completed_turn(cli: Cli) -> str:
    sent = cli("turn", "send", "docs", "Hi!", "--wait", "--json")
    assert sent.returncode == 0, sent.stderr
    turn = json.loads(sent.stdout)["result"]["turn"]
    assert turn["state"] == "completed"
    return str(turn["turnId"])


def test_turn_send_wait_prints_the_reply(cli: Cli) -> None:
    """README and cli.md's first turn: `turn send hello 'Hi!' --wait` prints Hi!, exit 0."""
    done = cli("turn", "send", "docs", "Hi!", "--wait")
    assert (done.returncode, done.stdout) == (0, "Hi!\n"), done.stderr


def test_turn_wait_on_a_completed_turn_exits_0(cli: Cli) -> None:
    """`turn wait TURN --state running` on a turn that completed: exit 0, as the page says."""
    turn_id = _completed_turn(cli)
    done = cli("turn", "wait", turn_id, "--state", "running", "--timeout", "2s")
    assert done.returncode == 0, done.stderr


def test_turn_wait_on_a_completed_turn_without_state_exits_0(cli: Cli) -> None:
    """`turn wait TURN` with no --state on a completed turn: exit 0 and `satisfied yes`."""
    turn_id = _completed_turn(cli)
    done = cli("turn", "wait", turn_id, "--timeout", "2s")
    assert done.returncode == 0, done.stderr
    assert "satisfied     yes" in done.stdout


@pytest.mark.parametrize(
    ("argv", "path"),
    [
        (["turn", "send", "docs", "x", "--wait", "--timeout", "xyz"], "--timeout"),
        (["turn", "send", "docs"], "TEXT"),
        (["session", "list", "--bogus"], "--bogus"),
        (["session", "attach", "docs"], "--json"),
    ],
)
def test_a_usage_error_names_the_flag(cli: Cli, argv: list[str], path: str) -> None:
    """The usage error's envelope: invalid_request, exit 2, details.path the flag/argument."""
    done = cli(*argv, "--json")
    assert done.returncode == 2
    error = json.loads(done.stdout)["error"]
    assert error["code"] == "invalid_request"
    assert error["details"].get("path") == path


def test_a_bad_limit_names_the_flag(cli: Cli) -> None:
    """The page's own example of a usage error (a bad flag value) names `--limit`."""
    done = cli("session", "list", "--limit", "abc", "--json")
    assert done.returncode == 2
    assert json.loads(done.stdout)["error"]["details"] == {"path": "--limit"}


def test_node_status_prints_the_registry_digest_whole(cli: Cli) -> None:
    """The digest `maia version` prints appears whole in `maia node status`'s human output."""
    version = cli("version")
    digest = DIGEST.search(version.stdout)
    assert digest is not None, version.stdout
    status = cli("node", "status")
    assert status.returncode == 0, status.stderr
    assert digest.group(0) in status.stdout


def test_a_human_preview_prints_its_input_digest_whole(cli: Cli, tmp_path: Path) -> None:
    """`routine create --dry-run`'s human preview shows the same whole inputDigest as --json."""
    args = [
        "routine", "create", "--name", "docs", "--cron", "0 9 * * 1-5", "--timezone", "UTC",
        "--project-id", "project", "--prompt", "p", "--command-id", "docs-digest", "--dry-run",
    ]  # fmt: skip
    as_json = cli(*args, "--json")
    assert as_json.returncode == 0, as_json.stderr
    digest = json.loads(as_json.stdout)["result"]["inputDigest"]
    assert DIGEST.fullmatch(digest)
    human = cli(*args)
    assert human.returncode == 0, human.stderr
    assert digest in human.stdout + human.stderr
