"""ProjectConfigV1: every field checked, every problem reported with its path (and line and
column when parsed from text), project:self/ resolved once, own executors required."""

from __future__ import annotations

from typing import Any

import pytest

from maia.config import (
    check_project_config,
    loads_jsonc_located,
    parse_project_config,
)
from maia.protocol import MaiaError

BASE: dict[str, Any] = {"schemaVersion": "maia.project-config.v1", "projectKey": "app"}
PID = "project_0123456789abcdef0123456789abcdef"


def problems(document: dict[str, Any], **kwargs: Any) -> list[str]:
    _, found = check_project_config({**BASE, **document}, **kwargs)
    return [p.path for p in found]


def test_full_document_reads_back() -> None:
    """Every spec field, with project:self/ resolved to the Project's ID."""
    config = parse_project_config({
        **BASE,
        "defaults": {"agentRef": "project:self/reviewer", "connectionRef": "user:work",
                     "modelRef": "claude-sonnet-4", "executorRef": "project:self/tests"},
        "limits": {"maxLiveSessions": 2, "maxDailyCostMicros": 5_000_000, "currency": "EUR"},
        "context": {"nestedAgentsMode": "nearest-explicit", "maxInstructionTokens": 4000,
                    "maxSkillIndexTokens": 100},
        "allowedConnections": ["user:work"],
        "allowedExecutors": ["project:self/tests", "builtin:echo"],
        "maintenance": {"enabled": True, "autoApplySafeChanges": False},
        "retention": {"ttlDays": {"events": 10, "receipts": 30}, "legalHold": False,
                      "erasure": "crypto-erase", "remains": "tombstone", "rawAudio": False},
        "executors": {"tests": {"kind": "exec", "argv": ["make", "test"], "wallTimeMs": 60000}},
    }, project_id=PID, expected_key="app")  # fmt: skip
    assert config.agent_ref == f"project:{PID}/reviewer"
    assert config.executor_ref == f"project:{PID}/tests"
    assert config.allowed_executors == (f"project:{PID}/tests", "builtin:echo")
    assert config.limits == {"max_live_sessions": 2, "max_daily_cost_micros": 5_000_000,
                             "currency": "EUR"}  # fmt: skip
    assert config.context.nested_agents_mode == "nearest-explicit"
    assert config.maintenance is not None
    assert config.maintenance.enabled
    assert config.retention is not None
    assert config.retention.ttl_days == {"events": 10, "receipts": 30}
    assert config.executors["tests"].argv == ("make", "test")


@pytest.mark.parametrize(
    ("document", "path"),
    [
        ({"schemaVersion": "maia.project-config.v0"}, "schemaVersion"),
        ({"projectKey": "App"}, "projectKey"),
        ({"surprise": True}, "surprise"),
        ({"defaults": {"executorRef": "echo"}}, "defaults.executorRef"),
        ({"defaults": {"modelRef": ""}}, "defaults.modelRef"),
        ({"defaults": {"shell": "x"}}, "defaults.shell"),
        ({"limits": {"maxLiveSessions": 0}}, "limits.maxLiveSessions"),
        ({"limits": {"maxQueuedMessages": 9}}, "limits.maxQueuedMessages"),
        ({"limits": {"currency": "GBP"}}, "limits.currency"),
        ({"limits": {"maxDailyCostMicros": 1}}, "limits.currency"),
        ({"limits": {"maxAgentDepth": True}}, "limits.maxAgentDepth"),
        ({"context": {"nestedAgentsMode": "all"}}, "context.nestedAgentsMode"),
        ({"context": {"maxInstructionTokens": -1}}, "context.maxInstructionTokens"),
        ({"allowedExecutors": "builtin:echo"}, "allowedExecutors"),
        ({"allowedConnections": ["bare"]}, "allowedConnections[0]"),
        ({"maintenance": {"enabled": True}}, "maintenance.autoApplySafeChanges"),
        ({"maintenance": {"enabled": 1, "autoApplySafeChanges": False}}, "maintenance.enabled"),
        ({"retention": {"ttlDays": {"receipts": 7}}}, "retention.ttlDays.receipts"),
        ({"retention": {"rawAudio": True}}, "retention.rawAudio"),
        ({"retention": {"erasure": "shred"}}, "retention.erasure"),
        ({"executors": {"x": {"kind": "exec"}}}, "executors.x.argv"),
        ({"defaults": {"executorRef": "project:self/missing"}}, "defaults.executorRef"),
    ],
)
def test_each_bad_field_is_named(document: dict[str, Any], path: str) -> None:
    """Each mistake is reported at its key's path."""
    assert path in problems(document)


def test_required_fields_and_every_problem_at_once() -> None:
    """Without schemaVersion and projectKey, and with two more mistakes, all four are listed."""
    _, found = check_project_config({"limits": {"maxLiveSessions": -1}, "context": []})
    assert sorted(p.path for p in found) == ["context", "limits.maxLiveSessions", "projectKey",
                                              "schemaVersion"]  # fmt: skip


def test_another_projects_definition_is_refused() -> None:
    """A Project file can name its own project: definitions only."""
    other = "project:project_ffffffffffffffffffffffffffffffff/x"
    assert problems({"allowedExecutors": [other]}, project_id=PID) == ["allowedExecutors[0]"]


def test_default_executor_must_be_allowed() -> None:
    """A default executor outside allowedExecutors is refused."""
    found = problems({"defaults": {"executorRef": "user:a"}, "allowedExecutors": ["user:b"]})
    assert found == ["defaults.executorRef"]


def test_project_key_must_equal_the_inventory() -> None:
    """projectKey other than the inventory's entry is refused."""
    assert problems({}, expected_key="other") == ["projectKey"]


def test_problems_carry_line_and_column() -> None:
    """Parsed with locations, a problem names the line and column of its key."""
    text = (
        '{\n "schemaVersion": "maia.project-config.v1",\n "projectKey": "app",\n'
        ' "limits": {\n   "maxAgentDepth": 0\n }\n}'
    )
    document, locations = loads_jsonc_located(text, "p.jsonc")
    with pytest.raises(MaiaError) as caught:
        parse_project_config(document, "p.jsonc", locations)
    assert caught.value.code == "configuration_invalid"
    assert (caught.value.details["line"], caught.value.details["column"]) == (5, 4)
    assert caught.value.message.startswith("configuration is invalid: p.jsonc:5:4: ")


def test_cost_limit_must_be_in_the_users_currency() -> None:
    """A Project cost limit in another currency than the user's limits is refused."""
    document = {"limits": {"maxDailyCostMicros": 5, "currency": "EUR"}}
    assert problems(document, user_currency="USD") == ["limits.currency"]
    assert problems(document, user_currency="EUR") == []
    assert problems(document) == []
