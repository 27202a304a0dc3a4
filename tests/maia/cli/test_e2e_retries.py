"""A consequential command retried with its `--command-id` and `--yes` (after a lost answer,
say), against a real Node process: the second run previews again, then its confirm replays
the first's stored result (`duplicate`, the same receipt): the change happens once, and the
retry is never refused because the thing already changed (invalid_state)."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from ._node import Cli, running_node


@pytest.fixture(scope="module")
def cli(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cli]:
    """A foreground Node admitting a local webhook receiver, and a Project directory."""
    config = '{"webhooks": {"allowAddresses": ["127.0.0.1/32"]}}'
    with running_node(tmp_path_factory.mktemp("retries"), config=config) as started:
        yield started


def _twice(cli: Cli, *args: str) -> tuple[dict[str, object], dict[str, object]]:
    first, again = cli(*args, "--yes", "--json"), cli(*args, "--yes", "--json")
    assert first.returncode == 0, first.stderr
    assert again.returncode == 0, again.stderr
    one, two = json.loads(first.stdout)["result"], json.loads(again.stdout)["result"]
    assert (one["delivery"], two["delivery"]) == ("new", "duplicate")
    assert two["receiptId"] == one["receiptId"]
    return one, two


def test_a_retried_machine_revoke_replays(cli: Cli) -> None:
    """`machine revoke --name N --command-id C --yes` twice: revoked once, then duplicate."""
    _twice(cli, "machine", "enroll", "--name", "retry-box", "--command-id", "enroll-1")
    _, two = _twice(cli, "machine", "revoke", "--name", "retry-box", "--command-id", "revoke-1")
    assert two["machine"]["state"] == "revoked"  # type: ignore[index]
    other = cli("machine", "revoke", "--name", "retry-box", "--command-id", "revoke-2", "--yes")
    assert other.returncode == 1  # another command: the machine is already revoked
    assert "invalid_state" in other.stderr


def test_a_retried_webhook_remove_replays(cli: Cli) -> None:
    """`webhook remove HOOK --command-id C --yes` run twice: the second answers `duplicate`
    with the first's receipt (the webhook removed once), not invalid_state."""
    added = cli("webhook", "add", "--url", "http://127.0.0.1:9/gone", "--event", "turn.completed",
                "--secret-env", "MAIA_TEST_HOOK_SECRET", "--yes", "--json")  # fmt: skip
    assert added.returncode == 0, added.stderr
    hook_id = json.loads(added.stdout)["result"]["webhook"]["webhookId"]
    args = ("webhook", "remove", hook_id, "--command-id", "rm-twice", "--yes", "--json")
    first, again = cli(*args), cli(*args)
    assert first.returncode == 0, first.stderr
    assert again.returncode == 0, again.stderr
    one, two = json.loads(first.stdout)["result"], json.loads(again.stdout)["result"]
    assert (one["delivery"], two["delivery"]) == ("new", "duplicate")
    assert two["receiptId"] == one["receiptId"]
    assert two["webhook"]["state"] == "removed"
