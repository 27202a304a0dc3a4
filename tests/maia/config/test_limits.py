"""CapacityLimitsV1 narrowing and the executor checks the Session side calls."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from maia.config import (
    CapacityLimits,
    EffectiveConfig,
    check_allowed_executor,
    effective_limits,
    limit_sources,
    parse_project_config,
    parse_user_config,
)
from maia.config._limits import KEYS
from maia.protocol import MaiaError

PID = "project_0123456789abcdef0123456789abcdef"


def _limits_strategy() -> st.SearchStrategy[dict[str, Any]]:
    fields = {attr: st.integers(low, high) for attr, low, high in KEYS.values()}
    return st.fixed_dictionaries({}, optional=fields)


@given(user=_limits_strategy(), project=_limits_strategy())
def test_the_smaller_limit_always_wins(user: dict[str, Any], project: dict[str, Any]) -> None:
    """Every effective limit is the user's, or the Project's when that is smaller: a Project
    can never widen a limit."""
    base = CapacityLimits(**user)
    effective = effective_limits(base, project)
    for attr, _, _ in KEYS.values():
        expected = min(getattr(base, attr), project.get(attr, getattr(base, attr)))
        assert getattr(effective, attr) == expected
        assert getattr(effective, attr) <= getattr(base, attr)


def test_sources_say_which_file_set_each_limit() -> None:
    """A narrowing Project limit is from the project; a user-set one from the user."""
    sources = limit_sources({"max_live_sessions": 5, "max_agent_depth": 2},
                            {"max_live_sessions": 2, "max_agent_depth": 9})  # fmt: skip
    assert sources["maxLiveSessions"] == "project"
    assert sources["maxAgentDepth"] == "user"
    assert sources["maxQueuedMessages"] == "default"


def test_cost_limits_compare_in_one_currency() -> None:
    """Same currency: the smaller wins; another currency than the user's is ignored."""
    user = CapacityLimits(max_daily_cost_micros=10, currency="USD")
    same = effective_limits(user, {"max_daily_cost_micros": 3, "currency": "USD"})
    other = effective_limits(user, {"max_daily_cost_micros": 3, "currency": "EUR"})
    assert (same.max_daily_cost_micros, same.currency) == (3, "USD")
    assert (other.max_daily_cost_micros, other.currency) == (10, "USD")


def test_allowed_executors_refusal_names_both() -> None:
    """configuration_invalid names the executor and the allowed ones; None allows all."""
    check_allowed_executor("user:x", None)
    with pytest.raises(MaiaError) as caught:
        check_allowed_executor("builtin:echo", ["user:a", "user:b"])
    assert caught.value.code == "configuration_invalid"
    assert caught.value.details["executor"] == "builtin:echo"
    assert caught.value.details["allowed"] == ["user:a", "user:b"]
    assert "user:a, user:b" in caught.value.message


def test_session_executor_uses_the_project_default_and_own_executors() -> None:
    """No executor asked: the Project's default, launched from the Project's own executors;
    an executor outside allowedExecutors is refused; without a Project, builtin:echo."""
    user = parse_user_config({"executors": {"cat": {"kind": "exec", "argv": ["/bin/cat"]}},
                              "swarm": {"capacity": {"maxLiveSessions": 9}}})  # fmt: skip
    project = parse_project_config({
        "schemaVersion": "maia.project-config.v1", "projectKey": "app",
        "defaults": {"executorRef": "project:self/tests"},
        "allowedExecutors": ["project:self/tests", "user:cat"],
        "limits": {"maxLiveSessions": 3},
        "executors": {"tests": {"kind": "exec", "argv": ["make", "test"]}},
    }, project_id=PID)  # fmt: skip
    effective = EffectiveConfig(user, project, PID)
    ref, executor = effective.session_executor(None)
    assert (ref, executor.argv) == (f"project:{PID}/tests", ("make", "test"))
    assert effective.session_executor("user:cat")[1].argv == ("/bin/cat",)
    with pytest.raises(MaiaError) as caught:
        effective.session_executor("builtin:echo")
    assert caught.value.code == "configuration_invalid"
    assert effective.limits.max_live_sessions == 3
    assert EffectiveConfig(user).session_executor(None)[0] == "builtin:echo"
    with pytest.raises(MaiaError) as missing:
        EffectiveConfig(user, project, PID).executor(f"project:{PID}/nope")
    assert missing.value.code == "configuration_invalid"
