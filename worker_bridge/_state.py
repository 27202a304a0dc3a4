"""The conversation's state machine, as one table (the h11 `_state.py` shape).

Rules:
- A worker speaks first (`hello`), the Node answers with `initialize`, the worker with
  `initialized`; only then may prompts flow, one turn at a time.
- A turn ends with an `event` whose kind is `turn.completed` or `turn.failed`, or with
  `interrupted` after the Node's `interrupt`.
- Each side runs the same table on its own view. Crossing frames are allowed for: an
  `interrupt` that meets a finished turn (the worker ignores it), a turn that ends while
  the Node is interrupting it.
- `heartbeat`, `ack`, `observation-batch` may come in any live state after `hello`;
  `shutdown` from any live state; `terminal` and `error` end the conversation.
- A key missing from `TRANSITIONS` is the refusal.
"""

from __future__ import annotations

import enum

from ._schema import NODE, WORKER

# typing costs a worker ~20 ms of start-up: import it for the type checker only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from typing import Final


class State(enum.Enum):
    AWAIT_HELLO = "await-hello"
    AWAIT_INITIALIZE = "await-initialize"
    INITIALIZING = "initializing"
    READY = "ready"
    TURN = "turn"
    INTERRUPTING = "interrupting"
    SHUTTING_DOWN = "shutting-down"
    CLOSED = "closed"
    ERROR = "error"


# The pseudo-type of an `event` frame that ends its turn.
TURN_END: Final = "event.end"

_S = State
_LIVE = (_S.AWAIT_INITIALIZE, _S.INITIALIZING, _S.READY, _S.TURN, _S.INTERRUPTING)

_rows: dict[tuple[State, str, str], State] = {
    (_S.AWAIT_HELLO, WORKER, "hello"): _S.AWAIT_INITIALIZE,
    (_S.AWAIT_INITIALIZE, NODE, "initialize"): _S.INITIALIZING,
    (_S.INITIALIZING, WORKER, "initialized"): _S.READY,
    (_S.READY, NODE, "prompt"): _S.TURN,
    (_S.READY, NODE, "interrupt"): _S.READY,  # crossed a finished turn: ignored
    (_S.TURN, WORKER, "event"): _S.TURN,
    (_S.TURN, WORKER, TURN_END): _S.READY,
    (_S.TURN, WORKER, "tool-call"): _S.TURN,
    (_S.TURN, NODE, "tool-result"): _S.TURN,
    (_S.TURN, NODE, "interrupt"): _S.INTERRUPTING,
    (_S.INTERRUPTING, WORKER, "event"): _S.INTERRUPTING,
    (_S.INTERRUPTING, WORKER, TURN_END): _S.READY,
    (_S.INTERRUPTING, WORKER, "interrupted"): _S.READY,
    (_S.INTERRUPTING, WORKER, "tool-call"): _S.INTERRUPTING,
    (_S.INTERRUPTING, NODE, "tool-result"): _S.INTERRUPTING,
    (_S.INTERRUPTING, NODE, "interrupt"): _S.INTERRUPTING,
    (_S.SHUTTING_DOWN, WORKER, "event"): _S.SHUTTING_DOWN,
    (_S.SHUTTING_DOWN, WORKER, TURN_END): _S.SHUTTING_DOWN,
    (_S.SHUTTING_DOWN, WORKER, "interrupted"): _S.SHUTTING_DOWN,
    (_S.SHUTTING_DOWN, WORKER, "tool-call"): _S.SHUTTING_DOWN,
    (_S.SHUTTING_DOWN, WORKER, "initialized"): _S.SHUTTING_DOWN,
}
for _state in (*_LIVE, _S.SHUTTING_DOWN):
    for _sender, _type in (
        (WORKER, "heartbeat"),
        (WORKER, "ack"),
        (NODE, "ack"),
        (WORKER, "observation-batch"),
    ):
        _rows[(_state, _sender, _type)] = _state
    _rows[(_state, WORKER, "terminal")] = _S.CLOSED
    _rows[(_state, WORKER, "error")] = _S.CLOSED
    _rows[(_state, NODE, "error")] = _S.CLOSED
    _rows[(_state, NODE, "shutdown")] = _S.SHUTTING_DOWN
_rows[(_S.AWAIT_HELLO, NODE, "shutdown")] = _S.SHUTTING_DOWN
_rows[(_S.AWAIT_HELLO, WORKER, "error")] = _S.CLOSED
_rows[(_S.AWAIT_HELLO, WORKER, "terminal")] = _S.CLOSED

TRANSITIONS: Mapping[tuple[State, str, str], State] = _rows
