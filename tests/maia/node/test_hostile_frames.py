"""Arbitrary JSON at a real Node on both sockets: each frame fails at most its own request.

Lone surrogate escapes, integers far past 64 bits, odd keys and odd values, in every
position of the envelope and of every op's params, sent before and after the hello; then
one subscribe on the observation socket. The Node process, a bystander connection opened
before the attack, and the attacking connection itself must all still answer.
"""

from __future__ import annotations

import json
from typing import Any

import attrs
import orjson
import trio
from hypothesis import given, settings
from hypothesis import strategies as st
from trio_websocket import open_websocket_url

from maia.core._fields import wire_name
from maia.protocol import REGISTRY

from ._raw import hello, open_observation_socket, request
from .conftest import NodeProcess

LONE = ["\ud800", "\udbff", "\udc00", "\udfff"]
HOSTILE_TEXT = st.one_of(
    st.text(max_size=8),
    st.sampled_from(LONE),
    st.tuples(st.text(max_size=3), st.sampled_from(LONE), st.text(max_size=3)).map("".join),
    st.just("\ud83d\ude00"),  # a valid pair: one ordinary character
)
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(),
    st.integers(min_value=2**63, max_value=2**300),
    st.integers(min_value=-(2**300), max_value=-(2**63)),
    st.floats(allow_nan=False, allow_infinity=False),
    HOSTILE_TEXT,
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(HOSTILE_TEXT, inner, max_size=3),
    max_leaves=8,
)
METHODS = [descriptor.operation_id for descriptor in REGISTRY]


def _wire_fields(op_id: str) -> list[str]:
    descriptor = REGISTRY.get(op_id)
    input_type = descriptor.input_type if descriptor is not None else None
    if input_type is None or not attrs.has(input_type):
        return []
    names = []
    for field in attrs.fields(input_type):
        wires = [getattr(meta, "wire", None) for meta in field.metadata.values()]
        names.append(next((w for w in wires if w), None) or wire_name(field.name))
    return names


@st.composite
def envelopes(draw: st.DrawFn, methods: list[str]) -> str:
    """One request frame: a known op (or junk) with its own fields (and junk) as params."""
    method = draw(st.one_of(st.sampled_from(methods), HOSTILE_TEXT, VALUES))
    fields = _wire_fields(method) if isinstance(method, str) else []
    keys = st.sampled_from(fields) | HOSTILE_TEXT if fields else HOSTILE_TEXT
    params = draw(st.one_of(st.dictionaries(keys, VALUES, max_size=5), VALUES))
    envelope: dict[str, Any] = {}
    if draw(st.integers(0, 9)) > 0:  # mostly with an id, so the answer can carry it
        envelope["id"] = draw(st.one_of(st.integers(0, 2**53 - 1), VALUES))
    envelope["method"] = method
    if draw(st.booleans()):
        envelope["params"] = params
    if draw(st.integers(0, 9)) == 0:
        envelope[draw(HOSTILE_TEXT)] = draw(VALUES)
    # ensure_ascii writes a lone surrogate as its \\uXXXX escape: valid JSON text.
    return json.dumps(envelope, ensure_ascii=True)


FRAMES = st.lists(envelopes(METHODS), min_size=1, max_size=8)
SUBSCRIBES = envelopes(["observe.events", "session.attach"])


async def _attack(node: NodeProcess, before: list[str], after: list[str], subscribe: str) -> None:
    api = f"ws://127.0.0.1:{node.port}/api/v1"
    async with open_websocket_url(api, extra_headers=node.auth) as bystander:
        assert (await hello(bystander))["ok"]
        async with open_websocket_url(api, extra_headers=node.auth) as attacker:
            for frames in (before, after):
                for frame in frames:
                    await attacker.send_message(frame)
                with trio.fail_after(30):
                    for _ in frames:  # one well-formed answer per frame, in any order
                        answer = orjson.loads(await attacker.get_message())
                        assert isinstance(answer["ok"], bool)
                if frames is before:
                    await hello(attacker)  # answered (ok, or already greeted: a typed error)
            status = await request(attacker, '{"id": "after", "method": "node.status"}')
            assert status["ok"], status
        async with open_observation_socket(node.port, node.auth) as stream:
            await stream.send_message(subscribe)
            with trio.fail_after(30):
                first = orjson.loads(await stream.get_message())
            assert isinstance(first["ok"], bool)
        answer = await request(bystander, '{"id": "bystander", "method": "node.status"}')
        assert answer["ok"], answer


@settings(max_examples=40)
@given(before=FRAMES, after=FRAMES, subscribe=SUBSCRIBES)
def test_no_frame_takes_down_the_node_or_another_connection(
    node_process: NodeProcess, before: list[str], after: list[str], subscribe: str
) -> None:
    """Hostile JSON on both sockets: the Node, a bystander and the attacker all stay up."""
    trio.run(_attack, node_process, before, after, subscribe)
    assert node_process.process.poll() is None, "the Node exited"
