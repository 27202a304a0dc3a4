"""`turn send --wait` followed live (on a terminal, or `--jsonl`): the reply streamed as it
arrives, on the observation stream. (Without a live stream, `turn send --wait` is one
`turn.send` with its bounded wait: `maia.client.send_and_wait_wire`.)

Order makes it exact: attach to the Session first (`session.attach` through the SDK's
`attach_session`), then send, so every record of the new turn comes after the attach point.
Deltas of the turn's message items go to stdout as they arrive (`--jsonl`: every record of
the turn, one a line). The subscription ends with the turn's terminal record
(`turn.completed`): every record of the turn came before it, so the text is whole, and one
`turn.wait` that answers at once reads the ended turn. A stream that cannot be opened (an
older Node) or is cut only loses the live text: the end then comes from the Node's bounded
`turn.wait`, and what was not streamed is printed from the finished turn's `outputText`.
So does a retried commandId (`delivery: duplicate`) and a send made before the stream
answered: that turn's records, its end among them, may precede the attach point.
"""

from __future__ import annotations

import json
from typing import Any, Final

import anyio

from maia.core import WAIT_MILLISECONDS_MAX, MaiaError

ATTACH_WAIT_S: Final = 3.0  # how long to wait for the stream before sending anyway
TURN_ENDED: Final = ("completed", "failed", "interrupted")


class TurnStream:
    """The live text of one turn, printed as it comes; knows what it has printed."""

    def __init__(self, out: Any) -> None:
        self.out = out
        self.turn_id: str | None = None
        self.attached = anyio.Event()
        self.opened = False  # the stream answered (attached): later turns' records follow
        self.ended = anyio.Event()
        self.gone = anyio.Event()  # the stream ended without our turn's end (or never opened)
        self.printed: dict[str, str] = {}  # item ID -> message text printed so far
        self.order: list[str] = []
        self.pending: list[dict[str, Any]] = []  # records seen before the turn ID was known

    @property
    def text(self) -> str:
        return "".join(self.printed[item] for item in self.order)

    def _write(self, item: str, text: str) -> None:
        if item not in self.printed:
            self.printed[item] = ""
            self.order.append(item)
        self.printed[item] += text
        if self.out.fmt == "human":
            self.out.data(text)

    def take(self, record: dict[str, Any]) -> None:
        """One stream record: print it if it belongs to our turn."""
        if self.turn_id is None:
            self.pending.append(record)
            return
        if record.get("turnId") != self.turn_id:
            return
        if self.out.fmt == "jsonl":
            self.out.data(json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n")
        kind, item = record.get("record"), str(record.get("itemId"))
        if record.get("itemKind") == "message" and isinstance(record.get("text"), str):
            if kind == "item.delta":
                self._write(item, record["text"])
            elif kind == "item.completed":
                done = self.printed.get(item, "")
                if record["text"].startswith(done):
                    self._write(item, record["text"][len(done) :])
        if kind == "turn.completed":
            self.ended.set()

    def know(self, turn_id: str) -> None:
        self.turn_id = turn_id
        pending, self.pending = self.pending, []
        for record in pending:
            self.take(record)

    async def follow(self, client: Any, session_id: str) -> None:
        """Read the Session's stream until cancelled; any failure just ends the live text."""
        from maia.client import attach_session

        try:
            async with attach_session(client, session_id, max_retries=2) as feed:
                async for frame in feed:
                    if frame.type in ("attached", "synchronized"):
                        self.opened = True
                        self.attached.set()
                    for record in frame.records:
                        self.take(record)
        except (MaiaError, TypeError, OSError):
            pass
        finally:
            self.attached.set()
            self.gone.set()


async def send_and_stream(
    client: Any, params: dict[str, Any], out: Any, limit: float
) -> tuple[dict[str, Any], str]:
    """Attach, send, and stream until the turn's terminal record (bounded by `limit`
    seconds); if the stream is lost first, wait with the Node's bounded `turn.wait`.

    Returns (the send result with the turn as last seen, the text printed live). Raises
    MaiaError from `turn.send` or `turn.wait`.
    """
    stream = TurnStream(out)
    sent: dict[str, Any] = {}
    turn: dict[str, Any] = {}
    failure: Exception | None = None
    deadline = anyio.current_time() + limit
    async with anyio.create_task_group() as group:
        group.start_soon(stream.follow, client, params["sessionId"])
        with anyio.move_on_after(ATTACH_WAIT_S):
            await stream.attached.wait()
        try:
            live = stream.opened  # attached before the send: the new turn's records follow
            sent = await client.request("turn.send", params)
            turn = sent["turn"]
            stream.know(turn["turnId"])
            if turn["state"] not in TURN_ENDED:
                # A retried commandId's turn (its stored state is the first send's) or a
                # send made before the stream answered may have records from before the
                # attach point, its end among them: only the Node's wait can say it ended.
                if live and sent.get("delivery") != "duplicate":
                    with anyio.move_on_at(deadline):
                        await _first(stream.ended, stream.gone)
                turn = await _waited(client, turn, deadline)
        except Exception as error:  # re-raised below, not wrapped by the task group
            failure = error
        finally:
            group.cancel_scope.cancel()
    if failure is not None:
        raise failure
    return {**sent, "turn": turn}, stream.text


async def _first(*events: anyio.Event) -> None:
    """Return once any of `events` is set."""
    async with anyio.create_task_group() as group:

        async def one(event: anyio.Event) -> None:
            await event.wait()
            group.cancel_scope.cancel()

        for event in events:
            group.start_soon(one, event)


async def _waited(client: Any, turn: dict[str, Any], deadline: float) -> dict[str, Any]:
    """The turn from the Node's bounded `turn.wait`, repeated until it ends or `deadline`
    (at once when the stream already saw its end)."""
    while True:
        left_ms = int((deadline - anyio.current_time()) * 1000)
        call_ms = max(0, min(WAIT_MILLISECONDS_MAX, left_ms))
        answer = await client.request(
            "turn.wait", {"turnId": turn["turnId"], "waitMilliseconds": call_ms}
        )
        turn = answer["turn"]
        if turn["state"] in TURN_ENDED or call_ms <= 0:
            return turn


def _human_record(record: dict[str, Any], out: Any) -> None:
    kind, text = record.get("record"), record.get("text")
    if kind == "turn.started":
        out.data(f"── turn {record.get('turnId')}\n")
    elif kind == "item.delta" and isinstance(text, str):
        out.data(
            text if record.get("itemKind") == "message" else f"[{record.get('itemKind')}] {text}"
        )
    elif kind == "item.completed":
        out.data("\n")
    elif kind == "turn.completed":
        out.data(f"── {record.get('turnState')}\n")


async def attach(client: Any, params: dict[str, Any], timeout_s: float | None, out: Any) -> int:
    """`maia session attach REF`: follow a Session's turns and items live until Ctrl-C or
    `--timeout` (exit 0). Human: the text as it comes; --json/--jsonl: one frame a line.

    Raises MaiaError when the stream cannot be opened or the Session does not exist.
    """
    from maia.client import attach_session

    from . import _exit

    with anyio.move_on_after(timeout_s if timeout_s is not None else float("inf")):
        async with attach_session(client, params["sessionId"],
                                  cursor=params.get("cursor")) as feed:  # fmt: skip
            async for frame in feed:
                if out.fmt != "human":
                    out.data(json.dumps(frame.frame, ensure_ascii=False, sort_keys=True) + "\n")
                    continue
                if frame.type == "synchronized":
                    for item in frame.frame.get("openItems", ()):
                        out.data(f"── turn {item.get('turnId')} (running)\n{item.get('text', '')}")
                for record in frame.records:
                    _human_record(record, out)
    return _exit.OK
