"""The runtime's own errors, typed, and the one place they become wire errors.

Inside the runtime a sender learns *why* a message was not handled from the exception's
type, not from a code string: `ActorClosed` (refused before it was queued: safe to retry),
`ActorOverloaded` (the mailbox stayed full), `AskTimedOut` (no answer within the deadline:
it may still be handled), `ActorStopped` (the actor stopped or crashed with the message
queued or in hand), `NotServing` (the registry is not running). None of them is a
`MaiaError`: a domain refusal (a table saying no) is a `MaiaError` the actor raises on
purpose, and the two must not be confused by a `suppress(MaiaError)`.

`to_wire(error)` maps them to the wire's codes once, at the API edge (the service layer's
handler wrapper). The details are what the wire's error docs promise (`target`, `reason`,
`method`, `ms`).
"""

from __future__ import annotations

from typing import Any

from maia.core import MaiaError


class ActorError(Exception):
    """A message an actor did not handle; `target` names the actor."""

    code = "unavailable"

    def __init__(self, target: str, message: str, **details: Any) -> None:
        super().__init__(message)
        self.target = target
        self.message = message
        self.details: dict[str, Any] = {"target": target, **details}

    def to_wire(self) -> MaiaError:
        return MaiaError(self.code, self.message, dict(self.details))


class ActorClosed(ActorError):
    """Refused before queueing: the actor is closing or stopped. Nothing was delivered."""

    def __init__(self, target: str) -> None:
        super().__init__(target, f"actor {target} is stopped", reason="closed")


class ActorStopped(ActorError):
    """The actor stopped (or crashed) with the message queued or in hand."""

    def __init__(self, target: str, why: str = "stopped") -> None:
        super().__init__(target, f"actor {target} {why}")
        self.why = why


class ActorOverloaded(ActorError):
    """The mailbox stayed full for the send timeout. Retryable."""

    code = "overloaded"

    def __init__(self, target: str) -> None:
        super().__init__(target, f"actor {target} mailbox is full")


class AskTimedOut(ActorError):
    """No answer within the ask's deadline; the message may still be handled."""

    code = "deadline_exceeded"

    def __init__(self, target: str, ms: int, method: str = "ask") -> None:
        super().__init__(
            target, f"{method} to actor {target} did not finish within {ms} ms",
            method=method, ms=ms,
        )  # fmt: skip


class NotServing(ActorError):
    """The registry (or runtime) is not running."""

    def __init__(self, target: str) -> None:
        super().__init__(target, f"registry {target} is not serving")


def to_wire(error: BaseException) -> MaiaError | None:
    """The wire error for a runtime error (None for anything else)."""
    if isinstance(error, ActorError):
        return error.to_wire()
    return None
