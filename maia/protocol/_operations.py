"""The built registry of Maia's operations (checked at import: a bad op fails here)."""

from __future__ import annotations

from typing import Final

from ._ops_approval import APPROVAL_OPERATIONS
from ._ops_config import CONFIG_OPERATIONS
from ._ops_node import NODE_OPERATIONS
from ._ops_records import RECORD_OPERATIONS
from ._ops_routine import ROUTINE_OPERATIONS
from ._ops_session import SESSION_OPERATIONS
from ._ops_turn import TURN_OPERATIONS
from ._ops_webhook import WEBHOOK_OPERATIONS
from ._registry import Registry, build_registry

# Bump when an op is removed or altered (the contract check refuses it otherwise).
REGISTRY_VERSION: Final = "0.6.0"  # 0.5.0: turn.list, turn.show's prompt; 0.6.0: approvals, usage

ALL_OPERATIONS: Final = (
    NODE_OPERATIONS + SESSION_OPERATIONS + TURN_OPERATIONS + RECORD_OPERATIONS
    + CONFIG_OPERATIONS + WEBHOOK_OPERATIONS + ROUTINE_OPERATIONS + APPROVAL_OPERATIONS
)  # fmt: skip
REGISTRY: Final[Registry] = build_registry(ALL_OPERATIONS)
