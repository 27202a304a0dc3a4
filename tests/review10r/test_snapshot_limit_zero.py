"""observe.events with `limit: 0` asks for no snapshot records, and its `truncated` must
still say whether matching events exist that the limit left out (docs/observations.md: "older
matching events exist that the limit left out"): it said false whatever the journal held, so
a client could not tell an empty journal from a skipped one. A real Node, its observation
socket on loopback."""

from __future__ import annotations

from pathlib import Path

import pytest

from ..review10o._api import api_of, real_node
from ..review10o.test_snapshot_truncated import snapshot_of


@pytest.mark.parametrize(
    ("event_type", "truncated"), [("project.added", True), ("routine.created", False)]
)
def test_a_zero_limit_snapshot_says_whether_it_left_matches_out(
    tmp_path: Path, event_type: str, truncated: bool
) -> None:
    """Two Projects added: limit 0 of project.added is truncated (2 left out); limit 0 of
    routine.created (none in the journal) is not; neither carries a record."""
    with real_node(tmp_path) as node:
        with api_of(node) as api:
            api.project(tmp_path / "p0")
            api.project(tmp_path / "p1")
        found = snapshot_of(node, {"eventTypes": [event_type], "limit": 0})
    assert found == (truncated, 0)
