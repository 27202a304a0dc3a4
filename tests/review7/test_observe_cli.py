"""`maia observe events` against a real Node follows the observation stream, as its help
says (before: the command sent `observe.events` on `/api/v1`, which answers
`command_not_implemented`, so it failed every time): `--jsonl` prints each frame a line
until `--timeout` (exit 0), `--json` is refused as for every stream, and a query the Node
refuses is its typed error with the field named."""

from __future__ import annotations

import json
from collections.abc import Iterator

import pytest

from tests.maia.cli._node import Cli, running_node


@pytest.fixture(scope="module")
def cli(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cli]:
    with running_node(tmp_path_factory.mktemp("observe")) as started:
        made = started("session", "create", "--title", "watched", "--json")
        assert made.returncode == 0, made.stderr
        yield started


def test_jsonl_prints_the_snapshot_then_the_summary(cli: Cli) -> None:
    """The snapshot's frames come first, then the summary; the timeout ends it with exit 0."""
    done = cli("observe", "events", "--jsonl", "--timeout", "3s")
    assert done.returncode == 0, done.stderr
    frames = [json.loads(line) for line in done.stdout.splitlines()]
    assert frames[0]["type"] == "snapshot"
    types = [f["type"] for f in frames]
    assert "summary" in types
    assert types.index("summary") > max(i for i, t in enumerate(types) if t == "snapshot")
    records = [r for f in frames if f["type"] == "snapshot" for r in f["records"]]
    assert "session.created" in {r["eventType"] for r in records}


def test_human_output_lists_the_records(cli: Cli) -> None:
    """Human text prints a line per record, naming its event type."""
    done = cli("observe", "events", "--timeout", "2s")
    assert done.returncode == 0, done.stderr
    assert "session.created" in done.stdout


def test_json_is_refused_as_for_every_stream(cli: Cli) -> None:
    """A stream has no one document: --json is a usage error (exit 2), answered as
    `session attach --json` is: the error envelope alone, saying to use --jsonl."""
    done = cli("observe", "events", "--json", "--timeout", "2s")
    assert done.returncode == 2
    assert json.loads(done.stdout)["error"]["code"] == "invalid_request"
    assert "--jsonl" in done.stderr


def test_a_refused_query_names_the_field(cli: Cli) -> None:
    """An event type no observation carries is validation_failed naming the field, exit 2."""
    query = json.dumps({"eventTypes": ["turn.bogus"]})
    done = cli("observe", "events", "--jsonl", "--query", query, "--timeout", "3s")
    assert done.returncode == 2
    assert "query.eventTypes[0]" in done.stderr


def test_a_cursor_from_before_a_restart_is_said_and_followed_by_a_snapshot(
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """Human text says on stderr that the cursor was reset (and why), then prints the fresh
    snapshot's records; --jsonl prints the reset frame itself."""
    from tests.maia.cli._node import start_node, stop_node

    with running_node(tmp_path_factory.mktemp("observe_reset")) as cli:
        first = cli("observe", "events", "--timeout", "1s")
        assert first.returncode == 0, first.stderr
        cursor = first.stderr.rsplit("--cursor ", 1)[1].split()[0]
        made = cli("session", "create", "--title", "after", "--json")
        assert made.returncode == 0, made.stderr
        # a second Node run on the same home: the cursor's epoch is gone
        again = cli("node", "stop")
        assert again.returncode == 0, again.stderr
        process = start_node(cli.home)
        try:
            human_text = cli("observe", "events", "--cursor", cursor, "--timeout", "2s")
            assert human_text.returncode == 0, human_text.stderr
            assert "cursor_reset_required" in human_text.stderr
            assert "restarted" in human_text.stderr
            assert "session.created" in human_text.stdout
            lines = cli("observe", "events", "--cursor", cursor, "--jsonl", "--timeout", "2s")
            assert json.loads(lines.stdout.splitlines()[0])["type"] == "reset"
        finally:
            stop_node(process)


def test_a_gap_is_said_with_the_records_it_lost() -> None:
    """A gap frame (the SDK resumes after it by itself) is a note naming the records lost;
    a records frame is no note."""
    from maia.cli._observe_cmd import _frame_note

    gap = {"type": "gap", "reason": "subscriber_lagged", "droppedRecordCount": 3,
           "coalescedRecordCount": 2, "cursor": "c1.x"}  # fmt: skip
    assert _frame_note(gap) == "fell behind (subscriber_lagged): 5 records not printed"
    assert _frame_note({"type": "event", "records": []}) is None
