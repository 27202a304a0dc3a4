"""A receiver's Retry-After, however large or odd, gives a bounded wait (at most 10 h) or
none; it never breaks the attempt (a 5,000-digit number and non-ASCII digits raised
ValueError out of the HTTP client before)."""

from __future__ import annotations

import pytest
import trio

from actors.webhook import (
    MAX_RETRY_AFTER_MS,
    HttpxClient,
    SendKind,
    parse_allow_addresses,
    parse_retry_after,
    resolve_destination,
)

from ..actors.webhook._receiver import LoopbackOnlyConnector, Receiver, static_resolver

ALLOW = parse_allow_addresses(["127.0.0.1/32"])
NOW = 1_767_222_000_000  # 2025-12-31T23:00:00Z


@pytest.mark.parametrize(
    ("header", "wait"),
    [("9" * 5000, MAX_RETRY_AFTER_MS), ("99999999999999999999", MAX_RETRY_AFTER_MS),
     ("Fri, 31 Dec 9999 23:59:59 GMT", MAX_RETRY_AFTER_MS), ("-5", None), ("1e9", None)],
)  # fmt: skip
async def test_a_receivers_retry_after_is_capped_or_ignored(
    nursery: trio.Nursery, header: str, wait: int | None
) -> None:
    """A 429 over real HTTP with an enormous or malformed Retry-After is a failed attempt
    whose wait is capped at 10 h, or no wait at all."""
    receiver = Receiver(script=[429], extra_headers=[("retry-after", header)])
    await nursery.start(receiver.serve)
    url = f"http://127.0.0.1:{receiver.port}/in"
    destination = await resolve_destination(url, ALLOW, static_resolver({}))
    with trio.fail_after(30):
        result = await HttpxClient(LoopbackOnlyConnector()).post(destination, (), b"{}", NOW)
    assert (result.kind, result.status_code, result.retry_after_ms) == (
        SendKind.FAILED, 429, wait,
    )  # fmt: skip
    assert parse_retry_after(header, NOW) == wait


@pytest.mark.parametrize("header", ["\u00b2", "\u0661\u0662", "\uff17"])
def test_only_ascii_digits_are_seconds(header: str) -> None:
    """Superscript, Arabic-Indic or full-width digits are no delay-seconds (RFC 9110): no
    wait, and no ValueError (int() refused the superscript two before)."""
    assert parse_retry_after(header, NOW) is None
