"""The effective configuration of a Project's work: the admitted user configuration, narrowed
by the admitted Project configuration, with where each value comes from.

These are the pure functions the Session side calls (docs/configuration.md lists which limit
is applied where): `EffectiveConfig.limits` for every CapacityLimitsV1 check,
`EffectiveConfig.session_executor` for `session.create` (the Project's default executor
when none is asked for, `allowedExecutors`, Project executors).
"""

from __future__ import annotations

from typing import Any, Final

import attrs

from maia.core import MaiaError, parse_definition_ref

from ._limits import CapacityLimits, check_allowed_executor, effective_limits, limit_sources
from ._project_config import ProjectConfig
from ._user import ExecutorConfig, UserConfig

DEFAULT_EXECUTOR_REF: Final = "builtin:echo"

# `config.show` names each value by its dotted path in the user file (`swarm.capacity.*`,
# `swarm.defaultTimezone`, …; a Project's narrowing of a limit is its source, `project`).
# Registry 0.12.0 and earlier named three of them otherwise: those names stay in `effective`
# beside the file's, the same values, for clients that read them (docs/configuration.md).
EFFECTIVE_ALIASES: Final = {
    "limits": "swarm.capacity",
    "defaultTimezone": "swarm.defaultTimezone",
    "administratorAgentRef": "swarm.administratorAgentRef",
}


@attrs.frozen
class EffectiveConfig:
    """The user configuration and (for work in a Project) the Project's, both as admitted."""

    user: UserConfig
    project: ProjectConfig | None = None
    project_id: str | None = None
    # The admitted snapshots this was built from (None: never admitted), for an activation
    # to record which configuration it ran under (spec: managed activations use the
    # admitted snapshot ID).
    user_snapshot_id: str | None = None
    project_snapshot_id: str | None = None

    @property
    def limits(self) -> CapacityLimits:
        """The CapacityLimitsV1 this work runs under (the smaller of user and Project)."""
        if self.project is None:
            return self.user.capacity
        return effective_limits(self.user.capacity, self.project.limits)

    def executor(self, ref: str) -> ExecutorConfig:
        """The executor `ref` names: builtin:, user: (the user file) or this Project's own
        `project:<project-id>/<name>`. Raises `configuration_invalid` for one nothing
        defines, `validation_failed` for a malformed reference."""
        parsed = parse_definition_ref(ref, "executor")
        if parsed.scope != "project":
            return self.user.executor(ref)
        found = None
        if self.project is not None and parsed.project_id == self.project_id:
            found = self.project.executors.get(parsed.id)
        if found is None:
            own = sorted(self.project.executors) if self.project is not None else []
            known = [f"project:{self.project_id}/{n}" for n in own]
            raise MaiaError(
                "configuration_invalid",
                f"configuration is invalid: no executor {ref} in this Project's admitted "
                f"configuration (its executors: {', '.join(known) or 'none'})",
                {"detail": f"no executor {ref}", "executor": ref, "known": known},
            )
        return found

    def session_executor(self, requested: str | None) -> tuple[str, ExecutorConfig]:
        """The executor reference and launcher of a new Session: `requested`, else the
        Project's `defaults.executorRef`, else builtin:echo; refused with
        `configuration_invalid` (naming the executor and the allowed ones) when the
        Project's `allowedExecutors` does not list it, or when nothing defines it."""
        ref = requested or (self.project.executor_ref if self.project else None)
        ref = ref or DEFAULT_EXECUTOR_REF
        if self.project is not None:
            check_allowed_executor(ref, self.project.allowed_executors)
        return ref, self.executor(ref)

    def view(self) -> dict[str, Any]:
        """The effective values with their sources, for `config.show`."""
        project_limits = self.project.limits if self.project else {}
        limits = self.limits.to_json()
        sources = limit_sources(self.user.capacity_set, project_limits)
        sourced = {k: {"value": v, "source": sources.get(k, "default")} for k, v in limits.items()}
        out: dict[str, Any] = {
            "swarm.capacity": sourced,
            "swarm.defaultTimezone": self._sourced("swarm.defaultTimezone",
                                                   self.user.default_timezone),
            "sessions.workerIdleMs": self._sourced("sessions.workerIdleMs",
                                                   self.user.sessions.worker_idle_ms),
            "webhooks.allowAddresses": self._sourced("webhooks.allowAddresses",
                                                     list(self.user.webhooks.allow_addresses)),
            "executors": self._executors(),
        }  # fmt: skip
        if self.user.sessions.approval_timeout_ms is not None:
            out["sessions.approvalTimeoutMs"] = {"value": self.user.sessions.approval_timeout_ms,
                                                 "source": "user"}  # fmt: skip
        if self.user.administrator_agent_ref is not None:
            out["swarm.administratorAgentRef"] = {"value": self.user.administrator_agent_ref,
                                                  "source": "user"}  # fmt: skip
        defaults = self._defaults()
        if defaults:
            out["defaults"] = defaults
        if self.project is not None:
            if self.project.allowed_executors is not None:
                out["allowedExecutors"] = {"value": list(self.project.allowed_executors),
                                           "source": "project"}  # fmt: skip
            if self.project.allowed_connections is not None:
                out["allowedConnections"] = {"value": list(self.project.allowed_connections),
                                             "source": "project"}  # fmt: skip
        out.update({old: out[new] for old, new in EFFECTIVE_ALIASES.items() if new in out})
        return out

    def _executors(self) -> list[dict[str, str]]:
        rows = [{"ref": "builtin:echo", "kind": "echo", "source": "builtin"}]
        rows += [{"ref": f"user:{n}", "kind": e.kind, "source": "user"}
                 for n, e in sorted(self.user.executors.items())]  # fmt: skip
        if self.project is not None:
            rows += [{"ref": f"project:{self.project_id}/{n}", "kind": e.kind,
                      "source": "project"}
                     for n, e in sorted(self.project.executors.items())]  # fmt: skip
        return rows

    def _defaults(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        user = {"connectionRef": self.user.connection_ref, "modelRef": self.user.model_ref}
        project: dict[str, str | None] = {}
        if self.project is not None:
            project = {"agentRef": self.project.agent_ref,
                       "connectionRef": self.project.connection_ref,
                       "modelRef": self.project.model_ref,
                       "executorRef": self.project.executor_ref}  # fmt: skip
        for key in ("agentRef", "connectionRef", "modelRef", "executorRef"):
            if project.get(key) is not None:
                out[key] = {"value": project[key], "source": "project"}
            elif user.get(key) is not None:
                out[key] = {"value": user[key], "source": "user"}
        if "executorRef" not in out:
            out["executorRef"] = {"value": DEFAULT_EXECUTOR_REF, "source": "default"}
        return out

    def _sourced(self, key: str, value: Any) -> dict[str, Any]:
        return {"value": value, "source": "user" if key in self.user.written else "default"}
