"""ObservabilityPolicyV1 as Maia documents it (the spec names the type without its fields).

    "observability": {
      "logLevel": "debug" | "info" | "warning" | "error",   // node.log threshold
      "debugSamplePercent": 0..100,   // share of debug records kept (dropped ones counted)
      "eventRetentionDays": 1..3650,  // how long journal events are kept
      "traces": {"enabled": true | false}
    }

Validated now, kept in the admitted snapshot; the Node does not act on it yet
(docs/configuration.md).
"""

from __future__ import annotations

from typing import Any, Final, Literal

import attrs

from ._jsonc import Path
from ._problems import Checker

LOG_LEVELS: Final = ("debug", "info", "warning", "error")
LogLevel = Literal["debug", "info", "warning", "error"]


@attrs.frozen
class ObservabilityPolicy:
    """The user's observability policy (every field has a default)."""

    log_level: LogLevel = "info"
    debug_sample_percent: int = 100
    event_retention_days: int = 30
    traces_enabled: bool = False


def read_observability(checker: Checker, value: Any, path: Path) -> ObservabilityPolicy:
    """The policy of an `observability` block; problems reported to `checker`."""
    keys = {"logLevel", "debugSamplePercent", "eventRetentionDays", "traces"}
    body = checker.obj(value, path, keys)
    default = ObservabilityPolicy()
    level = default.log_level
    if "logLevel" in body:
        level = checker.choice(body["logLevel"], (*path, "logLevel"), LOG_LEVELS) or level  # type: ignore[assignment]
    sample = checker.integer(
        body.get("debugSamplePercent", default.debug_sample_percent),
        (*path, "debugSamplePercent"), 0, 100, default.debug_sample_percent,
    )  # fmt: skip
    days = checker.integer(
        body.get("eventRetentionDays", default.event_retention_days),
        (*path, "eventRetentionDays"), 1, 3650, default.event_retention_days,
    )  # fmt: skip
    traces = checker.obj(body.get("traces", {}), (*path, "traces"), {"enabled"})
    enabled = checker.boolean(traces.get("enabled", False), (*path, "traces", "enabled"), False)
    return ObservabilityPolicy(level, sample, days, enabled)
