"""Standard Webhooks signing, checked against the specification's reference library."""

from __future__ import annotations

import base64
import time

import orjson
import pytest
from standardwebhooks import Webhook

from actors.webhook import SecretUnavailable, delivery_body, read_secret, signed_headers

KEY = bytes(range(32))
SECRET = "whsec_" + base64.b64encode(KEY).decode()


def test_reference_library_verifies_our_headers() -> None:
    """`standardwebhooks` accepts the headers we make and returns the body we sent."""
    body = delivery_body("turn.completed", 1_764_460_800_123, {"turnId": "turn_1"})
    now_ms = time.time_ns() // 1_000_000
    headers = dict(signed_headers(read_secret({"S": SECRET}, "S"), "msg_abc", now_ms, body))
    assert Webhook(SECRET).verify(body, headers) == {
        "type": "turn.completed",
        "timestamp": "2025-11-30T00:00:00.123Z",
        "data": {"turnId": "turn_1"},
    }
    assert headers["webhook-id"] == "msg_abc"
    assert headers["webhook-timestamp"] == str(now_ms // 1000)


def test_signature_matches_the_library_for_a_fixed_time() -> None:
    """Same id, timestamp and body: our signature equals the library's own."""
    from datetime import UTC, datetime

    body = orjson.dumps({"type": "maia.ping", "timestamp": "x", "data": {}})
    ours = dict(signed_headers(KEY, "msg_1", 1_700_000_000_000, body))["webhook-signature"]
    theirs = Webhook(SECRET).sign(
        "msg_1", datetime.fromtimestamp(1_700_000_000, UTC), body.decode()
    )
    assert ours == theirs


def test_a_tampered_body_fails_verification() -> None:
    """The signature covers the body: one changed byte is refused by the library."""
    from standardwebhooks.exceptions import WebhookVerificationError

    body = delivery_body("turn.completed", 0, {"n": 1})
    headers = dict(signed_headers(KEY, "msg_1", time.time_ns() // 1_000_000, body))
    with pytest.raises(WebhookVerificationError):
        Webhook(SECRET).verify(body.replace(b"1", b"2"), headers)


@pytest.mark.parametrize(
    ("environ", "reason"),
    [
        ({}, "secret_missing"),
        ({"S": ""}, "secret_missing"),
        ({"S": "not-whsec"}, "secret_malformed"),
        ({"S": "whsec_!!!notbase64"}, "secret_malformed"),
        ({"S": "whsec_" + base64.b64encode(b"short").decode()}, "secret_malformed"),
    ],
)
def test_missing_or_malformed_secret_names_the_variable(
    environ: dict[str, str], reason: str
) -> None:
    """A bad secret fails with a reason naming the variable, never showing its value."""
    with pytest.raises(SecretUnavailable) as failed:
        read_secret(environ, "S")
    assert failed.value.reason == reason
    assert "environment variable S" in str(failed.value)
    assert "notbase64" not in str(failed.value)
