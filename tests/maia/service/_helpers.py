"""Helpers of the handler tests."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from maia.protocol import REGISTRY, decode_input


def params(op_id: str, body: Mapping[str, object]) -> Any:
    """Params as the API would decode them."""
    descriptor = REGISTRY.get(op_id)
    assert descriptor is not None
    return decode_input(descriptor, body)
