"""Event-type filters name types a Node emits: a webhook for `turn.bogus`, or for a Project or
Session that does not exist, and an events.read filter on `turn.bogus` are refused with the
field named and nothing changed; the catalogue holds every type a real Node writes."""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio

from actors._diagrams import kinds
from maia.client import open_client
from maia.core import digest_json
from maia.observe._shape import DIAGNOSTICS_GAP_EVENT
from maia.protocol import MaiaError
from maia.service import KINDS, check_webhook_types, journal_event_types

from ..._node_process import NodeProcess, running_node
from ..._sessions import new_session, wait_turn

CONFIG = """{
  "executors": {"echo": {"kind": "echo"}},
  "webhooks": {"allowAddresses": ["127.0.0.1/32"]},
}
"""
ROOT = Path(__file__).resolve().parents[3]
# Every call that writes an event with a literal type: a table row, `emit`, `journal`, the
# machine enrollment's `_event`, or `append_event(..., event_type="...")`.
_WRITES = re.compile(
    r"""(?:emits=|emit\(conn, draft, |journal\(|_event\(conn, record, |event_type=)"""
    r"""f?"([a-z][a-z0-9_.{}]*)\"""",
)


def _spec(**extra: Any) -> dict[str, Any]:
    return {"url": "http://127.0.0.1:9/in", "secretEnv": "HOOK_S",
            "eventTypes": ["turn.completed"]} | extra  # fmt: skip


@pytest.fixture
def node(tmp_path: Path) -> Iterator[NodeProcess]:
    with running_node(tmp_path, CONFIG, {"HOOK_S": "whsec_" + "A" * 32}) as process:
        yield process


def _journal_types(home: Path) -> set[str]:
    with sqlite3.connect(home / "maia.db") as conn:
        return {row[0] for row in conn.execute("SELECT DISTINCT event_type FROM events")}


async def _refused(client: Any, op: str, **params: Any) -> MaiaError:
    with pytest.raises(MaiaError) as refused:
        await client.call(op, **params)
    return refused.value


async def test_a_real_node_refuses_filters_that_match_nothing(
    node: NodeProcess, tmp_path: Path
) -> None:
    """Over a real Node: an unknown or webhook-own event type, an unknown Project or Session
    are refused naming the field and add nothing; events.read refuses turn.bogus and serves
    turn.completed; every type the Node wrote for a turn is in the catalogue."""
    async with open_client(home=node.home) as client:
        session_id = await new_session(client, tmp_path / "proj", "a")
        owner = (await client.call("session.show", session_id=session_id)).session.project_id
        await trio.Path(tmp_path / "other").mkdir()
        other = await client.call(
            "project.add", command_id="p-o", root_path=str(tmp_path / "other")
        )
        sent = await client.call("turn.send", command_id="t1", session_id=session_id, text="hi")
        await wait_turn(client, sent.turn.turn_id, "completed")
        cases = [
            (_spec(eventTypes=["turn.completed", "turn.bogus"]), "validation_failed",
             "change.spec.eventTypes[1]"),
            (_spec(eventTypes=["webhook.added"]), "validation_failed",
             "change.spec.eventTypes[0]"),
            (_spec(projectId="project_nope"), "resource_not_found", "change.spec.projectId"),
            (_spec(sessionId="session_nope"), "resource_not_found", "change.spec.sessionId"),
            (_spec(projectId=other.project.project_id, sessionId=session_id),
             "resource_not_found", "change.spec.sessionId"),
        ]  # fmt: skip
        for n, (spec, code, path) in enumerate(cases):
            change = {"kind": "add", "spec": spec}
            for op in ("webhooks.change.preview", "webhooks.change.confirm"):
                proof = {} if op.endswith("preview") else {
                    "input_digest": digest_json({"change": change}),  # the preview's digest
                    "preview_id": "preview_x", "proof": "p"}  # fmt: skip
                error = await _refused(client, op, command_id=f"h{n}", change=change, **proof)
                assert (error.code, error.details["path"]) == (code, path), (op, spec)
        listed = await client.call("webhooks.list", include_removed=True)
        assert listed.webhooks == ()
        scoped = {"kind": "add", "spec": _spec(projectId=owner, sessionId=session_id)}
        both = await client.call("webhooks.change.preview", command_id="h-s", change=scoped)
        assert both.action == "add"
        every = await client.call(
            "webhooks.change.preview",
            command_id="h-all",
            change={"kind": "add", "spec": _spec(eventTypes=["*"])},
        )
        assert every.action == "add"

        error = await _refused(client, "events.read", position={"kind": "start"},
                               event_types=("turn.completed", "turn.bogus"))  # fmt: skip
        assert (error.code, error.details["path"]) == ("validation_failed", "eventTypes[1]")
        page = await client.call("events.read", position={"kind": "start"},
                                 event_types=("turn.completed",))  # fmt: skip
        assert [e.event_type for e in page.events] == ["turn.completed"]
    written = _journal_types(node.home)
    assert "turn.completed" in written
    assert written <= journal_event_types(), written - journal_event_types()


def test_every_event_the_source_writes_is_in_the_catalogue() -> None:
    """Each literal event type a table row or an event-writing call names is a known type
    (an `approval.{state}` template expands to allowed and denied)."""
    known = journal_event_types()
    found: set[str] = set()
    for folder in ("actors", "maia", "storage", "supervision"):
        for path in (ROOT / folder).rglob("*.py"):
            found.update(_WRITES.findall(path.read_text()))
    found = {t for t in found if "." in t}
    templates = {t for t in found if "{" in t}
    assert templates == {"approval.{state}"}
    assert {"approval.allowed", "approval.denied", DIAGNOSTICS_GAP_EVENT} <= known
    missing = sorted(found - templates - known)
    assert len(found) > 40
    assert missing == [], missing


def test_a_typo_is_refused_with_the_type_it_resembles() -> None:
    """turn.complete is refused naming its index and suggesting turn.completed; `*` passes."""
    check_webhook_types("change.spec.eventTypes", ["*", "session.created"])
    with pytest.raises(MaiaError) as refused:
        check_webhook_types("change.spec.eventTypes", ["*", "turn.complete"])
    assert refused.value.code == "validation_failed"
    assert refused.value.details["path"] == "change.spec.eventTypes[1]"
    assert "did you mean turn.completed?" in str(refused.value)


def test_every_kind_under_actors_is_run_and_its_events_known() -> None:
    """Each kind a package under actors/ declares is one the Node runs (`KINDS`), and every
    event its tables emit is in the catalogue: a fifth kind cannot be left out of either."""
    declared = {kind.name: kind for kind in kinds()}
    assert set(declared) >= {"session", "webhook", "routine", "machine"}
    assert set(declared) <= {kind.name for kind in KINDS}
    emitted = {
        row.emits
        for kind in declared.values()
        for table in kind.tables
        for row in (*table.rows, *((table.creation,) if table.creation else ()))
        if row.emits
    }
    assert len(emitted) > 20
    assert emitted <= journal_event_types(), emitted - journal_event_types()
