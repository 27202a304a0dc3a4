"""config.show names each effective value as the user file does (`swarm.capacity.*`,
`swarm.defaultTimezone`, `swarm.administratorAgentRef`, …); the names of registry 0.12.0
and earlier stay in `effective` with the same values, and the CLI shows each value once."""

from __future__ import annotations

from typing import Any

from maia.cli._config_cmd import render_config_show
from maia.config import EFFECTIVE_ALIASES, EffectiveConfig, parse_user_config

USER_FILE: dict[str, Any] = {
    "swarm": {
        "capacity": {"maxLiveSessions": 9, "maxQueuedMessages": 5, "maxDailyCostMicros": 7,
                     "currency": "EUR"},
        "defaultTimezone": "Europe/Paris",
        "administratorAgentRef": "user:admin",
    },
    "defaults": {"connectionRef": "user:main", "modelRef": "gpt-5"},
    "sessions": {"workerIdleMs": 1000},
    "webhooks": {"allowAddresses": ["127.0.0.1/32"]},
}  # fmt: skip


def _at(document: Any, dotted: str) -> Any:
    for part in dotted.split("."):
        document = document[part]
    return document


def _sourced(view: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every `{value, source}` of a view by its full dotted name (old names, executors out)."""
    out: dict[str, dict[str, Any]] = {}
    for key, entry in view.items():
        if key in EFFECTIVE_ALIASES or key == "executors":
            continue
        if "value" in entry:
            out[key] = entry
        else:
            out.update({f"{key}.{k}": v for k, v in entry.items()})
    return out


def test_every_value_the_user_file_sets_is_named_by_its_path_in_the_file() -> None:
    """Each effective value whose source is `user` sits at its own name in the user file,
    with the same value (the capacity limits under swarm.capacity, not limits)."""
    view = EffectiveConfig(parse_user_config(USER_FILE)).view()
    from_user = {k: e["value"] for k, e in _sourced(view).items() if e["source"] == "user"}
    assert {"swarm.capacity.maxLiveSessions", "swarm.capacity.currency",
            "swarm.defaultTimezone", "swarm.administratorAgentRef"} <= set(from_user)  # fmt: skip
    assert {name: _at(USER_FILE, name) for name in from_user} == from_user
    defaults = {k for k, e in _sourced(view).items() if e["source"] == "default"}
    assert "swarm.capacity.maxAgentDepth" in defaults


def test_the_old_names_stay_with_the_same_values() -> None:
    """`limits`, `defaultTimezone` and `administratorAgentRef` (registry 0.12.0's names)
    hold what their file-named keys hold; without an administrator neither name appears."""
    view = EffectiveConfig(parse_user_config(USER_FILE)).view()
    for old, new in EFFECTIVE_ALIASES.items():
        assert view[old] == view[new], old
    assert view["limits"]["maxLiveSessions"] == {"value": 9, "source": "user"}
    bare = EffectiveConfig(parse_user_config({})).view()
    assert "administratorAgentRef" not in bare
    assert "swarm.administratorAgentRef" not in bare
    utc = {"value": "UTC", "source": "default"}
    assert bare["defaultTimezone"] == bare["swarm.defaultTimezone"] == utc


def test_the_cli_shows_each_value_once_by_the_files_name() -> None:
    """`maia config show` lists swarm.capacity.* and swarm.defaultTimezone, not the old names;
    an older Node's answer (only the old names) is still shown, by those names."""
    view = EffectiveConfig(parse_user_config(USER_FILE)).view()
    lines = render_config_show({"effective": view}).splitlines()
    names = [line.split()[0] for line in lines]
    assert "swarm.capacity.maxLiveSessions" in names
    assert "swarm.defaultTimezone" in names
    assert not [n for n in names if n.startswith("limits.") or n == "defaultTimezone"]
    assert len(names) == len(set(names))
    older = {k: v for k, v in view.items() if k not in EFFECTIVE_ALIASES.values()}
    names = [line.split()[0] for line in render_config_show({"effective": older}).splitlines()]
    assert {"limits.maxLiveSessions", "defaultTimezone", "administratorAgentRef"} <= set(names)
