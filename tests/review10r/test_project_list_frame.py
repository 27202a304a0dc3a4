"""project.list pages under the 1 MiB frame as session.list, receipt.list and approval.list
do: a Project carries its root path (up to 4,096 bytes), and a path of control characters is
six bytes a byte as JSON, so 50 such Projects pass the frame in one page of `limit` 100. A
real Node, real folders, the raw `/api/v1` socket on loopback."""

from __future__ import annotations

from pathlib import Path

import orjson

from ..review10o._api import api_of, real_node

PROJECTS = 50
BOUND = 1_048_576
PART = "\x01" * 250  # a folder name of control characters (Linux allows any but / and NUL)


def _deep_root(base: Path, index: int) -> Path:
    """A folder about 3,900 bytes deep, its names control characters."""
    root = base / f"p{index}"
    for _ in range(15):
        root = root / PART
    return root


def test_a_page_of_projects_with_long_roots_stays_under_the_frame(tmp_path: Path) -> None:
    """Every page answers ok under 1 MiB, and the pages list each Project once."""
    with real_node(tmp_path) as node, api_of(node) as api:
        made = [api.project(_deep_root(tmp_path / "roots", index)) for index in range(PROJECTS)]
        listed: list[str] = []
        params: dict[str, object] = {"limit": 100}
        for _ in range(PROJECTS + 1):
            answer = api.ask("project.list", params)
            assert answer["ok"] is True, answer.get("error")
            assert len(orjson.dumps(answer)) < BOUND
            listed += [p["projectId"] for p in answer["result"]["projects"]]
            if answer["result"]["nextCursor"] is None:
                break
            params = {"limit": 100, "cursor": answer["result"]["nextCursor"]}
        assert sorted(listed) == sorted(made)
