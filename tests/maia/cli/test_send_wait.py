"""`maia turn send ID TEXT --wait` against a real Node, the CLI run in this process with its
sockets counted: one connection and two requests (hello, send) when nothing follows the turn
live; `--jsonl` streams records whose items are `turn show`'s. And the bounded waits
behind `--wait` and `turn wait`, by the waitMilliseconds each turn.wait carries."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests._wire_count import Wire, count_wire

from ._node import Cli, running_node


@pytest.fixture(scope="module")
def cli(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cli]:
    """A foreground Node on a fresh home, and a Project directory to run the CLI in."""
    with running_node(tmp_path_factory.mktemp("sendwait")) as started:
        yield started


@pytest.fixture
def wire(monkeypatch: pytest.MonkeyPatch) -> Wire:
    """Counts every TCP connection (API and observation sockets) and every request frame."""
    return count_wire(monkeypatch)


# Live: the API connection's hello, the observation socket's hello and subscription, then
# the send and one turn.wait that answers at once (the stream saw the end).
LIVE_REQUESTS = ["node.hello", "node.hello", "session.attach", "turn.send", "turn.wait"]


def _session(cli: Cli, title: str) -> str:
    made = cli("session", "create", "--title", title, "--json")
    assert made.returncode == 0, made.stderr
    return str(json.loads(made.stdout)["result"]["session"]["sessionId"])


def test_send_wait_json_is_one_socket_and_two_requests(cli: Cli, wire: Wire) -> None:
    """--json with the Session's ID: hello and turn.send on one connection; the document
    holds the ended turn and its items, as `turn show` lists them."""
    session = _session(cli, "json")
    wire.connections, wire.methods = 0, []
    sent = cli("turn", "send", session, "one socket", "--wait", "--json")
    assert sent.returncode == 0, sent.stderr
    assert (wire.connections, wire.methods) == (1, ["node.hello", "turn.send"])
    result = json.loads(sent.stdout)["result"]
    assert (result["turn"]["state"], result["turn"]["outputText"]) == ("completed", "one socket")
    shown = cli("turn", "show", result["turn"]["turnId"], "--json")
    assert result["items"] == json.loads(shown.stdout)["result"]["items"]


def test_send_wait_into_a_pipe_prints_the_reply_from_one_request(cli: Cli, wire: Wire) -> None:
    """Human output into a pipe (no terminal): the reply, from the same two requests."""
    session = _session(cli, "pipe")
    wire.connections, wire.methods = 0, []
    sent = cli("turn", "send", session, "piped reply", "--wait")
    assert sent.returncode == 0, sent.stderr
    assert sent.stdout == "piped reply\n"
    assert (wire.connections, wire.methods) == (1, ["node.hello", "turn.send"])


def test_a_title_costs_one_resolve_more(cli: Cli, wire: Wire) -> None:
    """A title (not a whole ID) is resolved first: hello, reference.resolve, turn.send."""
    _session(cli, "titled")
    wire.connections, wire.methods = 0, []
    sent = cli("turn", "send", "titled", "by title", "--wait")
    assert sent.returncode == 0, sent.stderr
    assert sent.stdout == "by title\n"
    assert wire.methods == ["node.hello", "reference.resolve", "turn.send"]


def test_a_failed_turn_exits_5_from_the_one_request(cli: Cli, wire: Wire) -> None:
    """A crashed worker: exit 5 with the reason on stderr, still hello + turn.send."""
    session = _session(cli, "crash")
    wire.connections, wire.methods = 0, []
    sent = cli("turn", "send", session, "/crash", "--wait")
    assert sent.returncode == 5, sent.stderr
    assert "failed" in sent.stderr
    assert wire.methods == ["node.hello", "turn.send"]


def test_jsonl_streams_the_turn_and_its_items_are_turn_shows(cli: Cli, wire: Wire) -> None:
    """--jsonl follows the turn live (an observation socket beside the API one): one
    subscription that ends with the turn's terminal record, then one turn.wait that answers
    at once; the completed items' texts are those `turn show` lists."""
    session = _session(cli, "jsonl")
    wire.connections, wire.methods = 0, []
    sent = cli("turn", "send", session, "streamed text", "--wait", "--jsonl")
    assert sent.returncode == 0, sent.stderr
    assert wire.connections == 2
    assert wire.methods == LIVE_REQUESTS
    *records, turn = [json.loads(line) for line in sent.stdout.splitlines()]
    assert records[-1]["record"] == "turn.completed"
    assert {r["turnId"] for r in records} == {turn["turnId"]}
    completed = {r["itemId"]: r["text"] for r in records if r["record"] == "item.completed"}
    shown = json.loads(cli("turn", "show", turn["turnId"], "--json").stdout)["result"]
    assert completed == {i["itemId"]: i["text"] for i in shown["items"]}


def test_a_long_streamed_turn_still_takes_one_wait(cli: Cli, wire: Wire) -> None:
    """A turn longer than a bounded wait: the end comes from the stream's terminal record,
    so the API connection still carries one turn.wait, answered at once."""
    session = _session(cli, "long-stream")
    wire.connections, wire.methods = 0, []
    sent = cli("turn", "send", session, "/sleep 5000 late", "--wait", "--jsonl")
    assert sent.returncode == 0, sent.stderr
    assert wire.methods == LIVE_REQUESTS
    *records, turn = [json.loads(line) for line in sent.stdout.splitlines()]
    assert records[-1]["record"] == "turn.completed"
    assert (turn["state"], turn["outputText"]) == ("completed", "late")


def test_without_a_stream_the_bounded_waits_end_it(
    cli: Cli, wire: Wire, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The observation socket refused (as an older Node would): no live records, the end
    from turn.wait, and the reply printed whole from the finished turn."""
    from maia.client import _observations
    from maia.core import MaiaError

    async def refused(*_args: Any, **_kwargs: Any) -> Any:
        raise MaiaError("invalid_request", "no observation socket here", {})

    monkeypatch.setattr(_observations, "open_observation_socket", refused)
    session = _session(cli, "no-stream")
    wire.connections, wire.methods = 0, []
    sent = cli("turn", "send", session, "whole anyway", "--wait", "--jsonl")
    assert sent.returncode == 0, sent.stderr
    (turn,) = [json.loads(line) for line in sent.stdout.splitlines()]
    assert (turn["state"], turn["outputText"]) == ("completed", "whole anyway")
    assert wire.methods[:2] == ["node.hello", "turn.send"]
    assert set(wire.methods[2:]) == {"turn.wait"}


def test_a_retried_command_id_of_an_ended_turn_is_answered_by_the_wait(
    cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`--wait --jsonl` again with the same --command-id after the turn ended: its records
    came before this attach, so the end comes from the Node's wait (one turn.wait that waits,
    answered at once), not from waiting out --timeout for a stream record that never comes."""
    session = _session(cli, "retried")
    first = cli("turn", "send", session, "once", "--command-id", "retry-1", "--wait", "--jsonl")
    assert first.returncode == 0, first.stderr
    waits = _turn_waits(monkeypatch)
    again = cli(
        "turn", "send", session, "once", "--command-id", "retry-1", "--wait", "--jsonl",
        "--timeout", "5s",
    )  # fmt: skip
    assert again.returncode == 0, again.stderr
    turn = json.loads(again.stdout.splitlines()[-1])
    assert (turn["state"], turn["outputText"]) == ("completed", "once")
    # Before the fix the only turn.wait came after --timeout had passed (waitMilliseconds 0).
    assert len(waits) == 1
    assert waits[0] > 0


def _turn_waits(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The waitMilliseconds of every turn.wait the SDK sends from now on."""
    from maia.client._transport import WebSocket

    waits: list[int] = []
    send = WebSocket.send

    async def counted(self: WebSocket, text: str) -> None:
        frame = json.loads(text)
        if frame["method"] == "turn.wait":
            waits.append(frame["params"]["waitMilliseconds"])
        await send(self, text)

    monkeypatch.setattr(WebSocket, "send", counted)
    return waits


@pytest.mark.parametrize(("prompt", "code"), [("done", 0), ("/crash", 5)])
def test_turn_wait_for_a_state_an_ended_turn_never_reaches_answers_at_once(
    cli: Cli, monkeypatch: pytest.MonkeyPatch, prompt: str, code: int
) -> None:
    """`turn wait TURN --state running` on a turn that already ended: one turn.wait that does
    not wait (the Node would hold it its whole 4 s: no state follows an end), exit 0 for a
    completed turn, 5 for a failed one, as `session wait` on a stopped Session."""
    session = _session(cli, f"ended-{code}")
    sent = cli("turn", "send", session, prompt, "--wait", "--json")
    assert sent.returncode == code, sent.stderr
    turn_id = json.loads(sent.stdout)["result"]["turn"]["turnId"]
    waits = _turn_waits(monkeypatch)
    done = cli("turn", "wait", turn_id, "--state", "running", "--timeout", "30s", "--json")
    assert done.returncode == code, done.stderr
    assert json.loads(done.stdout)["result"]["satisfied"] is False
    assert waits == [0]  # before the fix: [4000], answered after the Node's whole wait


def test_a_zero_wait_per_call_does_not_turn_the_waits_into_polling(cli: Cli, wire: Wire) -> None:
    """`session wait … --wait-milliseconds 0 --timeout 1s` on a Session that never gets
    there: after the first call each call waits the Node's 200 ms reread at least, so a
    second costs a handful of requests (it was ~1,500 a second: a busy loop)."""
    session = _session(cli, "zero-wait")
    wire.methods = []
    done = cli("session", "wait", session, "--state", "running", "--wait-milliseconds", "0",
               "--timeout", "1s")  # fmt: skip
    assert done.returncode == 3, done.stderr
    assert 1 <= wire.methods.count("session.wait") <= 10  # each repeat waits 200 ms or more
