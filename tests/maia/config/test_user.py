"""UserConfigV1 with Maia's executors: defaults, exec executors, refusals naming the key."""

from __future__ import annotations

from pathlib import Path

import pytest

from maia.config import CapacityLimits, UserConfig, load_user_config, parse_user_config
from maia.core import MaiaError


def test_absent_file_is_all_defaults(tmp_path: Path) -> None:
    """No config.jsonc: the defaults, with builtin:echo available and no other executor."""
    config = load_user_config(tmp_path / "config.jsonc")
    assert config == UserConfig()
    assert config.executor("builtin:echo").kind == "echo"
    assert config.capacity.max_queued_messages == 8


def test_exec_executor_from_jsonc(tmp_path: Path) -> None:
    """An exec executor with argv, env allow-list and wall time reads back, comments allowed."""
    path = tmp_path / "config.jsonc"
    path.write_text(
        """{
          // my agent
          "schemaVersion": "maia.user-config.v1",
          "swarm": {"capacity": {"maxLiveSessions": 3, "maxQueuedMessages": 4,}},
          "executors": {
            "cat": {"kind": "exec", "argv": ["/bin/cat"], "env": ["HOME"], "wallTimeMs": 5000},
            "mine": {"kind": "echo"},
          },
          "sessions": {"workerIdleMs": 0},
        }"""
    )
    config = load_user_config(path)
    cat = config.executor("user:cat")
    assert (cat.kind, cat.argv, cat.env, cat.wall_time_ms) == (
        "exec",
        ("/bin/cat",),
        ("HOME",),
        5000,
    )
    assert config.executor("user:mine").kind == "echo"
    assert config.capacity == CapacityLimits(max_live_sessions=3, max_queued_messages=4)
    assert config.sessions.worker_idle_ms == 0


@pytest.mark.parametrize(
    ("document", "path"),
    [
        ({"swarm": {"capacity": {"maxLiveSession": 3}}}, "swarm.capacity.maxLiveSession"),
        ({"swarm": {"capacity": {"maxQueuedMessages": 9}}}, "swarm.capacity.maxQueuedMessages"),
        ({"executors": {"x": {"kind": "exec"}}}, "executors.x.argv"),
        ({"executors": {"x": {"kind": "exec", "argv": []}}}, "executors.x.argv"),
        ({"executors": {"x": {"kind": "shell"}}}, "executors.x.kind"),
        ({"executors": {"x": {"kind": "echo", "argv": ["a"]}}}, "executors.x.argv"),
        ({"executors": {"x": {"kind": "echo", "env": "A"}}}, "executors.x.env"),
        ({"executors": {"Bad Name": {"kind": "echo"}}}, "executors.Bad Name"),
        (
            {"executors": {"x": {"kind": "exec", "argv": ["a"], "env": ["A-B"]}}},
            "executors.x.env[0]",
        ),
        ({"schemaVersion": "v0"}, "schemaVersion"),
        ({"surprise": 1}, "surprise"),
        ([], "$"),
    ],
)
def test_bad_documents_name_the_key(document: object, path: str) -> None:
    """Each bad document is configuration_invalid naming the offending key's path."""
    with pytest.raises(MaiaError) as caught:
        parse_user_config(document)
    assert caught.value.code == "configuration_invalid"
    assert caught.value.details["path"] == path


def test_syntax_error_has_line_and_column(tmp_path: Path) -> None:
    """A duplicate key is refused with its line and column."""
    path = tmp_path / "config.jsonc"
    path.write_text('{\n  "sessions": {},\n  "sessions": {}\n}')
    with pytest.raises(MaiaError) as caught:
        load_user_config(path)
    assert caught.value.code == "configuration_invalid"
    assert (caught.value.details["line"], caught.value.details["column"]) == (3, 3)


def test_unknown_executor_reference_lists_the_known() -> None:
    """A reference nothing configures is configuration_invalid listing what exists."""
    with pytest.raises(MaiaError) as caught:
        UserConfig().executor("user:claude")
    assert caught.value.code == "configuration_invalid"
    assert caught.value.details["known"] == ["builtin:echo"]
    with pytest.raises(MaiaError) as bad:
        UserConfig().executor("claude")
    assert bad.value.code == "validation_failed"


@pytest.mark.parametrize(
    ("document", "path"),
    [
        ({"swarm": {"defaultTimezone": "Not/AZone"}}, "swarm.defaultTimezone"),
        ({"swarm": {"defaultTimezone": "localtime"}}, "swarm.defaultTimezone"),  # the host's
        ({"swarm": {"capacity": {"currency": 5}}}, "swarm.capacity.currency"),
        ({"swarm": {"capacity": {"currency": "GBP"}}}, "swarm.capacity.currency"),
        (
            {"swarm": {"capacity": {"maxDailyCostMicros": -1, "currency": "USD"}}},
            "swarm.capacity.maxDailyCostMicros",
        ),
        ({"swarm": {"administratorAgentRef": "builtin:admin"}}, "swarm.administratorAgentRef"),
        ({"swarm": {"administratorAgentRef": "user:"}}, "swarm.administratorAgentRef"),
        ({"defaults": {"connectionRef": "project:p/x"}}, "defaults.connectionRef"),
        ({"defaults": {"modelRef": "has space"}}, "defaults.modelRef"),
        ({"observability": {"logLevel": "loud"}}, "observability.logLevel"),
        ({"observability": {"debugSamplePercent": 101}}, "observability.debugSamplePercent"),
        ({"observability": {"traces": {"enabled": "yes"}}}, "observability.traces.enabled"),
        ({"observability": {"colour": True}}, "observability.colour"),
    ],
)
def test_user_values_are_checked(document: object, path: str) -> None:
    """Time zone, currency, references, cost and observability are checked when present."""
    with pytest.raises(MaiaError) as caught:
        parse_user_config(document)
    assert path in [p["path"] for p in caught.value.details["problems"]]


def test_good_user_values_read_back() -> None:
    """A real IANA zone, a currency, user: references and an observability block."""
    config = parse_user_config({
        "swarm": {"defaultTimezone": "Europe/Paris", "administratorAgentRef": "user:admin",
                  "capacity": {"maxDailyCostMicros": 2_000_000, "currency": "EUR"}},
        "defaults": {"connectionRef": "user:work", "modelRef": "gpt-5"},
        "observability": {"logLevel": "debug", "eventRetentionDays": 7,
                          "traces": {"enabled": True}},
    })  # fmt: skip
    assert config.default_timezone == "Europe/Paris"
    assert (config.capacity.max_daily_cost_micros, config.capacity.currency) == (2_000_000, "EUR")
    assert config.observability is not None
    assert (config.observability.log_level, config.observability.traces_enabled) == ("debug", True)
    assert (config.connection_ref, config.model_ref) == ("user:work", "gpt-5")
