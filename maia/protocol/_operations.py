"""Maia's registry of operations, loaded a group at a time.

Each group is a tuple of descriptors in one `_ops_*` module. The registry imports a group
when one of its ops is first asked for (through the generated index), and every group, with
the whole registry's checks, when it is iterated; so `maia node status` builds only the node
ops. The digest is pinned to the generated constant. Both live in `_generated.py`, written
by `maia contract generate` and checked by `maia contract check` and a test.
"""

from __future__ import annotations

from typing import Final

from ._generated import OPERATION_INDEX, REGISTRY_DIGEST
from ._registry import Registry, lazy_registry
from ._versioning import Deprecation

# Bump the minor when an op is added, removed or altered (the contract check refuses it
# otherwise; docs/versioning.md has the whole policy).
# 0.5.0: turn.list, turn.show's prompt; 0.6.0: approvals, usage; 0.7.0: Session.failureMessage,
# truncated items (artifactPath) and outputTruncated; 0.9.0: agent exposure classes, the
# digest covers capabilities, errors and deprecations, observe.events registered,
# turn.send waitMilliseconds; 0.10.0: the event envelope, events.read statuses; 0.11.0: the
# observation stream's summary frame, machine.* and session.create's machine (issue 16);
# 0.12.0: declared errors no input reached dropped (session.create, session.rename,
# project.add, project.relocate.confirm, config.admit.preview)
REGISTRY_VERSION: Final = "0.14.0"

# Renamed or removed operations, CLI commands, flags and config keys, each kept as an alias
# until its removeAfter date (at least 90 days and one minor release; docs/versioning.md).
DEPRECATIONS: Final[tuple[Deprecation, ...]] = ()

# Where the ops live, "module:TUPLE". Add a group here; then run `maia contract generate`.
OPERATION_GROUPS: Final = (
    "maia.protocol._ops_node:NODE_OPERATIONS",
    "maia.protocol._ops_session:SESSION_OPERATIONS",
    "maia.protocol._ops_turn:TURN_OPERATIONS",
    "maia.protocol._ops_records:RECORD_OPERATIONS",
    "maia.protocol._ops_config:CONFIG_OPERATIONS",
    "maia.protocol._ops_webhook:WEBHOOK_OPERATIONS",
    "maia.protocol._ops_routine:ROUTINE_OPERATIONS",
    "maia.protocol._ops_approval:APPROVAL_OPERATIONS",
    "maia.protocol._ops_observe:OBSERVE_OPERATIONS",
    "maia.protocol._ops_machine:MACHINE_OPERATIONS",
)
REGISTRY: Final[Registry] = lazy_registry(
    OPERATION_GROUPS,
    OPERATION_INDEX,
    digest=REGISTRY_DIGEST,
    deprecations=DEPRECATIONS,
    registry_version=REGISTRY_VERSION,
)
