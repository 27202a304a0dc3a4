"""Review (s7-review2): what receipts say about turn commands, over a real Node's API (the
blocking SDK): each receipt names its target with the revisions it moved (spec "Mutation,
preview, confirmation, and receipt": targets carry priorRevision and resultRevision), the
same commandId replays as a duplicate with the same receipt, and other input under it is
idempotency_conflict that changes nothing."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from maia.client import MaiaError, SyncClient, connect_sync
from tests.maia.cli._node import running_node


@pytest.fixture(scope="module")
def client(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SyncClient]:
    base = tmp_path_factory.mktemp("receipts")
    with running_node(base) as cli, connect_sync(home=cli.home, timeout_s=30) as sdk:
        yield sdk


def session_with_a_queued_turn(
    client: SyncClient, project: str, key: str
) -> tuple[str, dict[str, Any]]:
    """A Session running a long turn, and the turn queued behind it."""
    session = client.request("session.create", {"projectId": project, "commandId": f"{key}-s"})
    session_id = session["session"]["sessionId"]
    client.request("turn.send", {"sessionId": session_id, "commandId": f"{key}-a",
                                 "text": "/sleep 30000 long"})  # fmt: skip
    queued = client.request("turn.send", {"sessionId": session_id, "commandId": f"{key}-b",
                                          "text": "behind"})  # fmt: skip
    return session_id, queued["turn"]


@pytest.fixture(scope="module")
def project(client: SyncClient, tmp_path_factory: pytest.TempPathFactory) -> str:
    root = tmp_path_factory.mktemp("receipts-project")
    added = client.request("project.add", {"commandId": "p", "rootPath": str(root)})
    return str(added["project"]["projectId"])


def target_of(client: SyncClient, command_id: str) -> dict[str, Any]:
    (target,) = client.request("receipt.get", {"commandId": command_id})["receipt"]["targets"]
    return dict(target)


def test_a_cancel_receipt_names_the_revisions_it_moved(client: SyncClient, project: str) -> None:
    """turn.cancel of a queued turn: its receipt's target is the turn, 1 -> 2, updated."""
    session_id, turn = session_with_a_queued_turn(client, project, "c")
    client.request("turn.cancel", {"turnId": turn["turnId"], "commandId": "c-x",
                                   "expectedRevision": turn["revision"]})  # fmt: skip
    target = target_of(client, "c-x")
    assert (target["priorRevision"], target["resultRevision"]) == (1, 2), target
    client.request("session.stop", {"sessionId": session_id, "commandId": "c-stop"})


def test_an_interrupt_receipt_of_a_queued_turn_names_the_revisions_it_moved(
    client: SyncClient, project: str
) -> None:
    """turn.interrupt of a queued turn: its receipt's target is the turn, 1 -> 2, like a
    cancel's, since it made the same change."""
    session_id, turn = session_with_a_queued_turn(client, project, "i")
    answer = client.request("turn.interrupt", {"turnId": turn["turnId"], "commandId": "i-x"})
    assert (answer["turn"]["state"], answer["turn"]["revision"]) == ("failed", 2)
    client.request("session.stop", {"sessionId": session_id, "commandId": "i-stop"})
    target = target_of(client, "i-x")
    assert (target.get("priorRevision"), target.get("resultRevision")) == (1, 2), target


def test_a_replayed_interrupt_is_a_duplicate_and_other_input_conflicts(
    client: SyncClient, project: str
) -> None:
    """The same commandId and turn again: duplicate with the same receipt; the same
    commandId for another turn: idempotency_conflict, and that turn stays queued."""
    session_id, turn = session_with_a_queued_turn(client, project, "r")
    other = client.request("turn.send", {"sessionId": session_id, "commandId": "r-c",
                                         "text": "another"})["turn"]  # fmt: skip
    first = client.request("turn.interrupt", {"turnId": turn["turnId"], "commandId": "r-x"})
    again = client.request("turn.interrupt", {"turnId": turn["turnId"], "commandId": "r-x"})
    assert (first["delivery"], again["delivery"]) == ("new", "duplicate")
    assert again["receiptId"] == first["receiptId"]
    with pytest.raises(MaiaError) as refused:
        client.request("turn.interrupt", {"turnId": other["turnId"], "commandId": "r-x"})
    assert refused.value.code == "idempotency_conflict"
    shown = client.request("turn.show", {"turnId": other["turnId"]})["turn"]
    assert (shown["state"], shown["revision"]) == ("queued", 1)
    client.request("session.stop", {"sessionId": session_id, "commandId": "r-stop"})
