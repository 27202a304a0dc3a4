"""routine.list pages under the 1 MiB frame as session.list, receipt.list and approval.list
do: a routine carries its whole prompt (up to 65,536 characters), so a page of `limit` 100
holds up to 6.5 MB, and 17 paused routines of a Project with ASCII prompts that long already
pass the frame. A real Node, the raw `/api/v1` socket on loopback."""

from __future__ import annotations

from pathlib import Path

import orjson

from maia.core._limits import MAX_TURN_TEXT_LENGTH

from ..review10o._api import api_of, command, real_node

ROUTINES = 17  # 17 x 64 KiB prompts: past the 1 MiB frame in one page
BOUND = 1_048_576


def test_a_page_of_routines_with_long_prompts_stays_under_the_frame(tmp_path: Path) -> None:
    """Every page answers ok under 1 MiB, and the pages list each routine once."""
    with real_node(tmp_path) as node, api_of(node) as api:
        project_id = api.project(tmp_path / "p")
        made = []
        for index in range(ROUTINES):
            body = {
                "commandId": command(),
                "name": f"r{index}",
                "schedule": {"cron": "0 9 * * 1-5", "timezone": "UTC"},
                "template": {"projectId": project_id, "prompt": "x" * MAX_TURN_TEXT_LENGTH},
                "paused": True,
            }
            preview = api.call("routine.create.preview", body)
            proof = {"inputDigest": preview["inputDigest"], "proof": preview["proof"]}
            made.append(api.call("routine.create.confirm", {**body, **proof})["routine"])
        listed: list[str] = []
        params: dict[str, object] = {"limit": 100}
        for _ in range(ROUTINES + 1):
            answer = api.ask("routine.list", params)
            assert answer["ok"] is True, answer.get("error")
            assert len(orjson.dumps(answer)) < BOUND
            listed += [r["routineId"] for r in answer["result"]["routines"]]
            if answer["result"]["nextCursor"] is None:
                break
            params = {"limit": 100, "cursor": answer["result"]["nextCursor"]}
        assert sorted(listed) == sorted(r["routineId"] for r in made)
