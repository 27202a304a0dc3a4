"""CapacityLimitsV1: the limits of the user file, the narrowing of a Project file, and the
pure functions the Session side calls to apply them.

The user's `swarm.capacity` sets every limit (an absent key is its default). A Project's
`limits` can only narrow: each key it sets is compared with the user's and the smaller wins,
an absent key inherits the user's value. Nothing here reads a file or a clock.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final, Literal

import attrs

from maia.core import MAX_SESSION_PENDING_TURNS, MaiaError

from ._jsonc import Path
from ._problems import Checker

DEFAULT_WALL_TIME_MS: Final = 3_600_000
CURRENCIES: Final = ("USD", "EUR")
MAX_DAILY_COST_MICROS: Final = 10**15  # a billion units of the currency a day
Currency = Literal["USD", "EUR"]


@attrs.frozen
class CapacityLimits:
    """CapacityLimitsV1 (docs/configuration.md says which limits are enforced today)."""

    max_live_sessions: int = 64  # Sessions with a running worker
    max_concurrent_activations: int = 64
    max_children_per_session: int = 16
    max_agent_depth: int = 4
    max_pending_routine_ticks: int = 64
    max_queued_messages: int = MAX_SESSION_PENDING_TURNS  # pending turns per Session
    max_input_tokens_per_activation: int = 200_000
    max_output_tokens_per_activation: int = 32_000
    max_wall_time_ms_per_activation: int = DEFAULT_WALL_TIME_MS
    max_output_bytes_per_tool: int = 65_536
    max_daily_cost_micros: int | None = None
    currency: Currency | None = None

    def to_json(self) -> dict[str, Any]:
        """The limits by their wire names (absent optional limits left out)."""
        out: dict[str, Any] = {wire: getattr(self, attr) for wire, (attr, _, _) in KEYS.items()}
        if self.max_daily_cost_micros is not None:
            out["maxDailyCostMicros"] = self.max_daily_cost_micros
        if self.currency is not None:
            out["currency"] = self.currency
        return out


# wire name -> (attribute, minimum, maximum)
KEYS: Final = {
    "maxLiveSessions": ("max_live_sessions", 1, 100_000),
    "maxConcurrentActivations": ("max_concurrent_activations", 1, 100_000),
    "maxChildrenPerSession": ("max_children_per_session", 0, 1024),
    "maxAgentDepth": ("max_agent_depth", 1, 64),
    "maxPendingRoutineTicks": ("max_pending_routine_ticks", 0, 100_000),
    "maxQueuedMessages": ("max_queued_messages", 1, MAX_SESSION_PENDING_TURNS),
    "maxInputTokensPerActivation": ("max_input_tokens_per_activation", 1, 10**9),
    "maxOutputTokensPerActivation": ("max_output_tokens_per_activation", 1, 10**9),
    "maxWallTimeMsPerActivation": ("max_wall_time_ms_per_activation", 1000, 7 * 24 * 3600_000),
    "maxOutputBytesPerTool": ("max_output_bytes_per_tool", 1, 1 << 30),
}
ALL_KEYS: Final = frozenset({*KEYS, "maxDailyCostMicros", "currency"})


def read_limits(checker: Checker, value: Any, path: Path) -> dict[str, Any]:
    """The limits a document sets, by attribute name (absent keys left out)."""
    body = checker.obj(value, path, set(ALL_KEYS))
    values: dict[str, Any] = {}
    for wire, (attr, low, high) in KEYS.items():
        if wire in body:
            default = getattr(CapacityLimits(), attr)
            values[attr] = checker.integer(body[wire], (*path, wire), low, high, default)
    if "maxDailyCostMicros" in body:
        cost = checker.integer(
            body["maxDailyCostMicros"], (*path, "maxDailyCostMicros"), 0, MAX_DAILY_COST_MICROS, 0
        )
        values["max_daily_cost_micros"] = cost
    if "currency" in body:
        values["currency"] = checker.choice(body["currency"], (*path, "currency"), CURRENCIES)
    if "maxDailyCostMicros" in body and "currency" not in body:
        checker.report((*path, "currency"), "is required with maxDailyCostMicros")
    return values


def effective_limits(user: CapacityLimits, project: Mapping[str, Any]) -> CapacityLimits:
    """The limits a Project's work runs under: each limit the Project sets narrows the user's
    (the smaller wins). A daily cost limit is compared only in the same currency; a Project
    cost limit in another currency than the user's is ignored (admission refuses one)."""
    values: dict[str, Any] = {}
    for attr, _, _ in KEYS.values():
        mine = project.get(attr)
        values[attr] = getattr(user, attr) if mine is None else min(mine, getattr(user, attr))
    cost, currency = user.max_daily_cost_micros, user.currency
    project_cost = project.get("max_daily_cost_micros")
    project_currency = project.get("currency")
    if project_cost is not None and (cost is None or project_currency == currency):
        cost = project_cost if cost is None else min(cost, project_cost)
        currency = project_currency
    return CapacityLimits(**values, max_daily_cost_micros=cost, currency=currency)


def limit_sources(user_set: Mapping[str, Any], project: Mapping[str, Any]) -> dict[str, str]:
    """Where each effective limit comes from, by wire name: "project" when the Project's
    value is the smaller, else "user" when the user file sets it, else "default"."""
    user = CapacityLimits(**user_set)
    sources: dict[str, str] = {}
    for wire, (attr, _, _) in KEYS.items():
        narrowed = attr in project and project[attr] < getattr(user, attr)
        sources[wire] = "project" if narrowed else "user" if attr in user_set else "default"
    effective = effective_limits(user, project)
    if effective.max_daily_cost_micros is not None:
        from_user = effective.max_daily_cost_micros == user.max_daily_cost_micros
        sources["maxDailyCostMicros"] = sources["currency"] = "user" if from_user else "project"
    return sources


def check_allowed_executor(executor_ref: str, allowed: Sequence[str] | None) -> None:
    """Refuse an executor a Project's `allowedExecutors` does not list (None: all allowed).

    Raises `configuration_invalid` naming the executor and the allowed ones.
    """
    if allowed is None or executor_ref in allowed:
        return
    listed = ", ".join(allowed) if allowed else "none"
    raise MaiaError(
        "configuration_invalid",
        f"configuration is invalid: executor {executor_ref} is not allowed in this Project "
        f"(allowedExecutors: {listed})",
        {
            "detail": f"executor {executor_ref} is not in allowedExecutors",
            "path": "allowedExecutors",
            "executor": executor_ref,
            "allowed": list(allowed),
        },
    )
