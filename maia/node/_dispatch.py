"""From a parsed request to a response: schema check, caller check, deadline, handler.

Handlers are registered by operation ID, one line each:

    @HANDLERS.handler("node.status")
    async def node_status(call: Call, params: NodeStatusInput) -> NodeStatusOutput: ...

Registering a handler for an ID the registry does not know raises at import time, and
`Dispatcher` checks the table against its registry again when it is built, so a typo can
never ship. A registered op with no handler answers `command_not_implemented`.

A handler may also be a plain function: it answers at once (node.hello), or returns an
awaitable when it has to wait (node.status while its shared reads are stale). `begin` runs
everything up to that point and returns the encoded answer, or a `Pending` that `finish`
awaits under the deadline (a handler may answer `Encoded`, already in wire form); the
server answers the first inline, without a task or a cancel scope (together ~25 us a
request), and gives the second a task of its own.
"""

from __future__ import annotations

import inspect
import logging
import math
from collections.abc import Awaitable, Callable, Iterable
from typing import Any, Protocol, TypeVar

import attrs
import trio

from maia.core import MaiaError

from ._ops import REGISTRY, OperationDescriptor, decode_input, encode_output

LOCAL_USER_ROLE = "local-user"
DEFAULT_DEADLINE_S = 5.0

log = logging.getLogger("maia.node")


@attrs.frozen
class Call:
    """What a handler knows about the call it serves: the caller and the Node's services."""

    role: str
    method: str
    connection_id: int
    services: Any  # the Node's service bundle (`_service.NodeServices`), typed there


Handler = Callable[[Call, Any], Awaitable[Any]] | Callable[[Call, Any], Any]
H = TypeVar("H", bound=Handler)


@attrs.frozen
class Pending:
    """An answer that needs waiting for: `Dispatcher.finish` awaits it under the deadline."""

    descriptor: OperationDescriptor
    awaitable: Awaitable[Any]


@attrs.frozen
class Encoded:
    """A handler's answer already in wire form: the JSON-safe dict `encode_output` gives
    for the op's output class, built by the handler from that class (`_status_wire`), so
    the dispatcher does not encode it again."""

    value: dict[str, Any]


class _Lookup(Protocol):
    def get(self, op_id: str, /) -> OperationDescriptor | None: ...


class _Registry(_Lookup, Protocol):
    def resolve(self, name: str, /) -> tuple[OperationDescriptor | None, Any]: ...

    def deprecation(self, name: str, /) -> Any: ...


class HandlerTable:
    """Handlers keyed by operation ID; refuses IDs its registry does not know."""

    def __init__(self, registry: _Lookup = REGISTRY) -> None:
        self._registry = registry
        self._handlers: dict[str, Handler] = {}

    def handler(self, op_id: str) -> Callable[[H], H]:
        """Decorator registering the handler of `op_id`.

        Raises `LookupError` for an ID the registry does not know, `ValueError` for a second
        handler of the same ID.
        """
        if self._registry.get(op_id) is None:
            raise LookupError(f"no registered operation {op_id!r}: cannot serve it")
        if op_id in self._handlers:
            raise ValueError(f"{op_id!r} already has a handler")

        def register(function: H) -> H:
            self._handlers[op_id] = function
            return function

        return register

    def get(self, op_id: str) -> Handler | None:
        return self._handlers.get(op_id)

    def op_ids(self) -> Iterable[str]:
        return tuple(self._handlers)


HANDLERS = HandlerTable()


class Dispatcher:
    """Runs one request to its JSON-safe result, or raises `MaiaError`."""

    def __init__(
        self,
        handlers: HandlerTable,
        *,
        registry: _Registry = REGISTRY,
        deadline_s: float = DEFAULT_DEADLINE_S,
    ) -> None:
        for op_id in handlers.op_ids():
            if registry.get(op_id) is None:
                raise LookupError(f"handler for {op_id!r}, which the registry does not know")
        self._handlers = handlers
        self._registry = registry
        self._deadline_s = deadline_s

    async def dispatch(self, call: Call, params: dict[str, Any]) -> Any:
        """The encoded result of `call.method` with `params`.

        Raises `MaiaError`: unknown_method, validation_failed (naming the field),
        role_denied, command_not_implemented, deadline_exceeded, internal_error, or what
        the handler raised.
        """
        answer = self.begin(call, params)
        return await self.finish(call, answer) if isinstance(answer, Pending) else answer

    def begin(self, call: Call, params: dict[str, Any]) -> Any:
        """The encoded result when the handler answers at once, else a `Pending` for
        `finish`. Raises what `dispatch` raises, but deadline_exceeded."""
        # A deprecated name reaches its op (a renamed op's alias reaches the replacement);
        # the server adds the deprecation diagnostic to the answer (`deprecation_of`).
        descriptor, _ = self._registry.resolve(call.method)
        if descriptor is None:
            raise MaiaError(
                "unknown_method", f"no operation named {call.method}", {"method": call.method}
            )
        if call.role not in descriptor.callers:
            raise MaiaError(
                "role_denied",
                f"{call.role} may not call {call.method}",
                {"role": call.role, "method": call.method},
            )
        value = decode_input(descriptor, params)
        handler = self._handlers.get(descriptor.operation_id)
        if handler is None:
            raise MaiaError(
                "command_not_implemented",
                f"{call.method} is registered but not served",
                {"method": call.method},
            )
        try:
            answer = handler(call, value)  # an async handler's coroutine: nothing ran yet
        except MaiaError:
            raise
        except Exception as error:
            raise _failed(call, error) from error
        if type(answer) is Encoded:
            return answer.value
        if inspect.isawaitable(answer):
            return Pending(descriptor, answer)
        return encode_output(descriptor, answer)

    async def finish(self, call: Call, pending: Pending) -> Any:
        """The encoded result of what `begin` left pending, awaited under the deadline."""
        # A bare CancelScope: move_on_after's context-manager wrapper costs measurably here.
        with trio.CancelScope(deadline=trio.current_time() + self._deadline_s) as scope:
            try:
                result = await pending.awaitable
            except MaiaError:
                raise
            except Exception as error:
                raise _failed(call, error) from error
        if scope.cancelled_caught:
            raise MaiaError(
                "deadline_exceeded",
                f"{call.method} did not finish within {math.floor(self._deadline_s * 1000)} ms",
                {"method": call.method, "ms": math.floor(self._deadline_s * 1000)},
            )
        if type(result) is Encoded:
            return result.value
        return encode_output(pending.descriptor, result)

    def deprecation_of(self, method: str) -> dict[str, Any] | None:
        """The machine-readable deprecation diagnostic of a method name, or None."""
        deprecation = self._registry.deprecation(method)  # a dict look-up: no alias, None
        return None if deprecation is None else dict(deprecation.diagnostic())


def _failed(call: Call, error: Exception) -> MaiaError:
    log.error("handler of %s failed", call.method, exc_info=error)
    return MaiaError("internal_error", "an internal error occurred", {"method": call.method})
