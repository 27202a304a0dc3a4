"""docs/configuration.md's `config show` names, run for real: each effective value under
its path in the user file, the older names beside them with the same values, and the page's
claim about which registry version used the older names."""

from __future__ import annotations

import json
import re
from pathlib import Path

from maia.protocol import REGISTRY_VERSION
from tests.maia.cli._node import running_node

OLD_TO_NEW = {"limits": "swarm.capacity", "defaultTimezone": "swarm.defaultTimezone"}


def _effective(base: Path) -> dict[str, object]:
    with running_node(base) as cli:
        shown = cli("config", "show", "--json")
    assert shown.returncode == 0, shown.stderr
    effective: dict[str, object] = json.loads(shown.stdout)["result"]["effective"]
    return effective


def test_the_old_names_stay_beside_the_new(tmp_path: Path) -> None:
    """`config show --json`: swarm.capacity and swarm.defaultTimezone, and the old names
    (limits, defaultTimezone) with the same values, as the page says."""
    effective = _effective(tmp_path)
    for old, new in OLD_TO_NEW.items():
        assert new in effective, new
        assert effective[old] == effective[new], (old, new)


def test_the_page_dates_the_old_names_by_no_current_registry_version() -> None:
    """The page dates the old names by no registry version this Node still is (the rename
    bumped none): any 'Registry X.Y.Z and earlier' it says is older than REGISTRY_VERSION."""
    page = (Path(__file__).parents[2] / "docs" / "configuration.md").read_text()
    current = _version(REGISTRY_VERSION)
    for claim in re.findall(r"[Rr]egistry (\d+\.\d+\.\d+) and earlier", page):
        assert _version(claim) < current, claim


def _version(text: str) -> tuple[int, ...]:
    return tuple(int(part) for part in text.split("."))
