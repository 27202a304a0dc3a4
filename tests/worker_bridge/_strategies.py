"""Hypothesis strategies for valid frames of every type (shared by the codec tests)."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

import worker_bridge as wb

ids = st.text(st.characters(codec="utf-8"), min_size=1, max_size=40)
names = st.text(st.characters(codec="utf-8"), min_size=1, max_size=60)
texts = st.text(st.characters(codec="utf-8"), max_size=300)
json_scalars = st.none() | st.booleans() | st.integers(-(2**53), 2**53) | texts
json_values = st.recursive(
    json_scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(names, inner, max_size=4),
    max_leaves=12,
)
objects = st.dictionaries(names, json_values, max_size=5)
counts = st.integers(0, 2**40)
kinds = st.sampled_from(sorted(wb._schema.EVENT_KINDS))

FRAMES: dict[str, st.SearchStrategy[Any]] = {
    "hello": st.builds(wb.Hello, name=names, pid=counts),
    "initialize": st.builds(
        wb.Initialize,
        attempt_id=ids,
        heartbeat_ms=counts,
        activation=objects,
        options=st.dictionaries(names, texts, max_size=4),
    ),
    "initialized": st.builds(wb.Initialized, capabilities=st.lists(names, max_size=5)),
    "prompt": st.builds(wb.Prompt, turn_id=ids, text=texts),
    "event": st.builds(
        wb.Event, turn_id=ids, kind=kinds, text=st.none() | texts, data=st.none() | objects
    ),
    "tool-call": st.builds(wb.ToolCall, turn_id=ids, call_id=ids, name=names, arguments=objects),
    "tool-result": st.builds(
        wb.ToolResult, turn_id=ids, call_id=ids, ok=st.booleans(), content=texts
    ),
    "observation-batch": st.builds(
        wb.ObservationBatch, records=st.lists(objects, max_size=5), dropped=counts
    ),
    "interrupt": st.builds(wb.Interrupt, turn_id=ids),
    "interrupted": st.builds(wb.Interrupted, turn_id=ids),
    "heartbeat": st.builds(wb.Heartbeat),
    "shutdown": st.builds(wb.Shutdown, reason=names),
    "terminal": st.builds(wb.Terminal, reason=names),
    "error": st.builds(wb.Error, code=names, message=texts),
    "ack": st.builds(wb.Ack, through=counts),
}
any_frame = st.one_of(*FRAMES.values())
