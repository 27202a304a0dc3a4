"""Routine and fire events reach the observation stream of a real Node (in this trio run, a
real loopback socket) in domain `scheduler`, each from the journal, owned by the routine."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import trio

from maia.client import observe_events, open_client, read_token
from maia.node import NodeConfig, NodeHome, NodeRunning, serve_node

WANTED = {"routine.created", "routine.fire_requested", "routine.fire_launching",
          "routine.fire_started"}  # fmt: skip


async def test_routine_events_are_observed_in_domain_scheduler(
    nursery: trio.Nursery, tmp_path: Path
) -> None:
    """Subscribed to domain scheduler: a create and a manual run show up as authoritative
    records owned by the routine, and no record of another domain arrives."""
    home = NodeHome(tmp_path / "home")
    running: NodeRunning = await nursery.start(serve_node, NodeConfig(home))
    root = tmp_path / "app"
    root.mkdir()
    seen: list[dict[str, Any]] = []
    async with open_client(running.url, token=read_token(home.token_path)) as client:
        with trio.fail_after(60):
            async with observe_events(client, {"domains": ["scheduler"], "limit": 0}) as feed:
                first = await feed.__anext__()
                assert first.type == "snapshot"
                project = await client.call("project.add", {"commandId": "p",
                                                            "rootPath": str(root)})  # fmt: skip
                body: dict[str, Any] = {
                    "commandId": "c1", "name": "r",
                    "schedule": {"cron": "0 0 1 1 *", "timezone": "UTC"},
                    "template": {"projectId": project.project.project_id, "prompt": "hi"},
                }  # fmt: skip
                preview = await client.call("routine.create.preview", body)
                proof = {"inputDigest": preview.input_digest, "proof": preview.proof}
                made = await client.call("routine.create.confirm", {**body, **proof})
                routine_id = made.routine.routine_id
                change = {"commandId": "run", "routineId": routine_id, "expectedRevision": 1}
                preview = await client.call("routine.run.preview", change)
                proof = {"inputDigest": preview.input_digest, "proof": preview.proof}
                await client.call("routine.run.confirm", {**change, **proof})
                async for frame in feed:
                    seen.extend(frame.records)
                    if {r["eventType"] for r in seen} >= WANTED:
                        break
    assert {r["domain"] for r in seen} == {"scheduler"}
    ours = [r for r in seen if r["eventType"] in WANTED]
    assert {(r["ownerType"], r["ownerId"], r["importance"]) for r in ours} == {
        ("routine", routine_id, "authoritative")
    }
    sequences = [r["ownerSequence"] for r in seen if r["ownerId"] == routine_id]
    assert sequences == sorted(sequences)
    assert not any(r["eventType"].startswith(("session.", "project.")) for r in seen)
