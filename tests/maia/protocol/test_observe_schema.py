"""observe.events is a registered op: the frames a real observation socket sends (over
127.0.0.1, real storage) decode against its output schema, its hello against node.hello's."""

from __future__ import annotations

import trio

from maia.client import observe_events
from maia.protocol import REGISTRY, NodeHelloOutput, ObserveInput, ObserveOutput, check
from tests.maia.observe.conftest import Served
from tests.maia.observe.conftest import served as served

__all__ = ["served"]


async def test_real_frames_decode_against_the_registered_schema(served: Served) -> None:
    """Snapshot, event and heartbeat frames (with durable records) all pass the strict check."""
    await served.append("owner_a", 5, payload={"text": "hi"})
    seen: dict[str, int] = {}
    with trio.fail_after(30):
        async with observe_events(served.endpoint, {"limit": 3}, heartbeats=True) as feed:
            async for frame in feed:
                decoded = check(ObserveOutput, {"frame": frame.frame})
                assert decoded.frame.type == frame.type
                seen[frame.type] = seen.get(frame.type, 0) + len(frame.records)
                if frame.type == "snapshot" and frame.frame["final"]:
                    await served.append("owner_a", 2)
                if "heartbeat" in seen and seen.get("event", 0) >= 2:
                    break
        check(NodeHelloOutput, feed.hello)
    assert seen["snapshot"] == 3
    assert seen["event"] >= 2


def test_the_op_is_registered_with_the_stream_and_the_query_schema() -> None:
    """observe.events has its descriptor (a stream, unsupported for agents) and schemas."""
    op = REGISTRY.get("observe.events")
    assert op is not None
    assert op.input_type is ObserveInput
    assert op.output_type is ObserveOutput
    assert op.stream is not None
    assert op.agent_exposure == "unsupported"
    assert "hello_required" in op.errors
