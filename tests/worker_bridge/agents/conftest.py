"""The loopback model server each agent test module drives through its own `script`."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from ._sse_server import SseServer, serve


@pytest.fixture
def server(script: Any) -> Iterator[SseServer]:
    """The module's `script` (an Anthropic or OpenAI mock) served on 127.0.0.1."""
    with serve(script) as running:
        yield running
