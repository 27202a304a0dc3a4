"""Send a prompt and wait for its turn's end on the client's one connection.

    answer = await send_and_wait(client, session_id, "Hi!", timeout_s=60)
    answer.turn.state, answer.turn.output_text, answer.items

`turn.send` with `waitMilliseconds` queues and waits (at most 4 s) in one request, so a
short turn costs the connection's hello and this one request. A longer turn is waited for
with `turn.wait` (each call at most 4 s, answered as soon as the turn ends) until it ends or
`timeout_s` passes; the answer is then the send's with the turn as last seen, and, once it
ended, its items as `turn.show`'s first page lists them.
"""

from __future__ import annotations

from typing import Any, Final, Protocol

import anyio

from maia.core import WAIT_MILLISECONDS_MAX

TURN_ENDED: Final = ("completed", "failed", "interrupted")


class Requester(Protocol):
    """What the wait needs of a client (the SDK's `MaiaClient` is one)."""

    async def request(self, method: str, params: dict[str, Any] | None = None) -> Any: ...


def _wait_ms(deadline: float) -> int:
    left = int((deadline - anyio.current_time()) * 1000)
    return max(0, min(WAIT_MILLISECONDS_MAX, left))


async def send_and_wait_wire(
    client: Requester, params: dict[str, Any], *, timeout_s: float
) -> dict[str, Any]:
    """`turn.send` (wire params, with its commandId) waited on until the turn ends or
    `timeout_s` passes; returns the wire answer of `turn.send` with the turn as last seen
    (`turn.state` says whether it ended) and, once ended, `items`.

    A retried commandId waits for the turn that command queued. Raises `MaiaError` from
    `turn.send`, `turn.wait` or `turn.show`.
    """
    deadline = anyio.current_time() + timeout_s
    sent: dict[str, Any] = await client.request(
        "turn.send", {**params, "waitMilliseconds": _wait_ms(deadline)}
    )
    turn = sent["turn"]
    if turn["state"] in TURN_ENDED:
        return sent
    while turn["state"] not in TURN_ENDED:
        call_ms = _wait_ms(deadline)
        if call_ms <= 0:
            return {**sent, "turn": turn}
        waited = await client.request(
            "turn.wait", {"turnId": turn["turnId"], "waitMilliseconds": call_ms}
        )
        turn = waited["turn"]
    page = await client.request("turn.show", {"turnId": turn["turnId"]})
    extra = {"items": page["items"], "itemsTruncated": page.get("itemsTruncated", False)}
    if page.get("nextItemCursor"):
        extra["nextItemCursor"] = page["nextItemCursor"]
    return {**sent, "turn": page["turn"], **extra}


async def send_and_wait(
    client: Any,
    session_id: str,
    text: str,
    *,
    timeout_s: float = 600.0,
    command_id: str | None = None,
) -> Any:
    """Send `text` to the Session and wait (at most `timeout_s`) for the turn to end, on
    `client`'s connection; returns the typed `TurnSendOutput` (its turn as last seen, and
    its items once it ended). Pass `command_id` to make a retry the same command.

    Raises `MaiaError` as `send_and_wait_wire` does.
    """
    from maia.core import new_id

    from ._projection import decode_result, descriptor_of

    params = {"commandId": command_id or new_id("command"), "sessionId": session_id,
              "text": text}  # fmt: skip
    wire = await send_and_wait_wire(client, params, timeout_s=timeout_s)
    return decode_result(descriptor_of("turn.send"), wire)
