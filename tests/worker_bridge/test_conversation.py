"""A stateful property test of a worker and a Node connection with frames in flight."""

from __future__ import annotations

from collections import deque
from typing import Any

from hypothesis import settings
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule

import worker_bridge as wb

S = wb.State


class Conversation(RuleBasedStateMachine):
    """Both sides follow their own view of the table; crossing frames never break them."""

    def __init__(self) -> None:
        super().__init__()
        self.worker = wb.WireConnection(wb.WORKER, epoch=1, worker_version="v", max_unacked=8)
        self.node = wb.WireConnection(wb.NODE, epoch=1, max_unacked=8)
        self.to_node: deque[bytes] = deque()
        self.to_worker: deque[bytes] = deque()
        self.turns = 0
        self.to_node.append(self.worker.send({"type": "hello", "name": "w", "pid": 1}))

    def _worker_sends(self, frame: dict[str, Any]) -> None:
        self.to_node.append(self.worker.send(frame))

    def _node_sends(self, frame: dict[str, Any]) -> None:
        self.to_worker.append(self.node.send(frame))

    @precondition(lambda self: self.to_node)
    @rule()
    def deliver_to_node(self) -> None:
        self.node.receive_data(self.to_node.popleft())
        assert isinstance(self.node.next_frame(), dict)

    @precondition(lambda self: self.to_worker)
    @rule()
    def deliver_to_worker(self) -> None:
        self.worker.receive_data(self.to_worker.popleft())
        assert isinstance(self.worker.next_frame(), dict)

    @precondition(lambda self: self.node.state is S.AWAIT_INITIALIZE)
    @rule()
    def initialize(self) -> None:
        self._node_sends(
            {
                "type": "initialize",
                "attemptId": "a",
                "heartbeatMs": 1,
                "activation": {},
                "options": {},
            }
        )

    @precondition(lambda self: self.worker.state is S.INITIALIZING)
    @rule()
    def initialized(self) -> None:
        self._worker_sends({"type": "initialized", "capabilities": []})

    @precondition(lambda self: self.node.state is S.READY)
    @rule()
    def prompt(self) -> None:
        self.turns += 1
        self._node_sends({"type": "prompt", "turnId": f"t{self.turns}", "text": "x"})

    @precondition(
        lambda self: self.worker.state in (S.TURN, S.INTERRUPTING) and self.worker.window_open
    )
    @rule()
    def delta(self) -> None:
        self._worker_sends({"type": "event", "turnId": "t", "kind": "message.delta"})

    @precondition(
        lambda self: self.worker.state in (S.TURN, S.INTERRUPTING) and self.worker.window_open
    )
    @rule()
    def complete(self) -> None:
        self._worker_sends({"type": "event", "turnId": "t", "kind": "turn.completed"})

    @precondition(lambda self: self.node.state is S.TURN)
    @rule()
    def interrupt(self) -> None:
        self._node_sends({"type": "interrupt", "turnId": "t"})

    @precondition(lambda self: self.worker.state is S.INTERRUPTING)
    @rule()
    def interrupted(self) -> None:
        self._worker_sends({"type": "interrupted", "turnId": "t"})

    @precondition(lambda self: self.worker.state not in (S.AWAIT_HELLO, S.CLOSED))
    @rule()
    def heartbeat(self) -> None:
        self._worker_sends({"type": "heartbeat"})

    @rule()
    def ack(self) -> None:
        line = self.node.ack()
        if line is not None:
            self.to_worker.append(line)

    @invariant()
    def window_holds(self) -> None:
        assert self.node.unacked_received <= 8
        assert self.worker.unacked_sent <= 8

    @invariant()
    def quiet_sides_agree(self) -> None:
        if not self.to_node and not self.to_worker:
            assert self.node.state is self.worker.state
            assert self.node.state is not S.ERROR


Conversation.TestCase.settings = settings(max_examples=80, stateful_step_count=50)
TestConversation = Conversation.TestCase
