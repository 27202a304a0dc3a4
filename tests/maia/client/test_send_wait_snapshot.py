"""`turn.send` with a wait, answered from the committed turn snapshot, says on the wire what
`turn.show` says of the same ended turn (turn, items, truncation, cursor)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from maia.client import Discovery, open_client
from maia.core import new_id

NodeProcess = tuple[Path, Discovery]
KEYS = ("turn", "items", "itemsTruncated", "nextItemCursor")
# The last: the longest prompt, all escapes (6 bytes each as JSON), so the page's budget
# cuts the output text (outputTruncated) and its one item (truncated) as turn.show does.
TEXTS = ("Hi!", 'quote " backslash \\ newline \n tab \t é ☃ \x01 end', "long " * 4000,
         "\x01" * 65_536)  # fmt: skip


async def _session(client: Any, home: Path) -> str:
    root = home.parent / "project-snapshot"
    root.mkdir(exist_ok=True)
    added = await client.request("project.add", {"commandId": new_id("command"),
                                                 "rootPath": str(root.resolve())})  # fmt: skip
    created = await client.request("session.create", {
        "commandId": new_id("command"), "title": "snapshot",
        "projectId": added["project"]["projectId"]})  # fmt: skip
    return str(created["session"]["sessionId"])


def _wire(answer: dict[str, Any]) -> bytes:
    return orjson.dumps({key: answer.get(key) for key in KEYS})


async def test_send_with_wait_answers_as_turn_show_does(node_process: NodeProcess) -> None:
    """For ended turns of plain, escaped, long and budget-cut text, the send's answer (new:
    from the page published with the turn's end; retried: read) has the same turn, items
    and truncation bytes as `turn.show`."""
    home, _ = node_process
    async with open_client(home=home) as client:
        session = await _session(client, home)
        for text in TEXTS:
            params = {"commandId": new_id("command"), "sessionId": session, "text": text,
                      "waitMilliseconds": 4000}  # fmt: skip
            sent = await client.request("turn.send", params)
            for _ in range(15):  # a loaded machine: the same command waits again (4 s each)
                if "items" in sent:  # the turn ended within the wait
                    break
                sent = await client.request("turn.send", params)
            assert sent["turn"]["state"] == "completed"
            assert sent["items"], "an ended turn's answer carries its items"
            shown = await client.request("turn.show", {"turnId": sent["turn"]["turnId"]})
            assert _wire(sent) == _wire(shown)
            again = await client.request("turn.send", params)
            assert again["delivery"] == "duplicate"
            assert _wire(again) == _wire(shown)
