"""One HTTP POST of a webhook delivery, and what its answer means for the retry schedule.

Why httpx (0.28.1, already a dependency): it runs under trio through anyio, so the Node needs
no second event loop, and it sits behind this module's one small interface (`WebhookClient`)
so its maintained fork httpx2, or another client, can replace it in one place. httpx 0.28 is
frozen upstream; nothing here depends on more than `AsyncClient.stream` and httpcore's network
backend interface.

How the SSRF guard's address is kept: the request URL keeps the *name* (so the Host header
and TLS SNI and certificate check use it), while the network backend handed to httpcore
ignores name resolution and dials `Destination.address` through a `Connector`, and refuses any
other host or port (a redirect is never followed, and a second destination is never dialled).
`trust_env=False`, so no proxy from the environment can carry the request elsewhere.
The `Connector` is the seam tests use to record and refuse every connection attempt.
httpx and httpcore (with anyio, certifi and what httpx's command line pulls in: ~5 MiB of a
Node that sends no webhook) load at the first delivery (`_http_pinned`), not at import.

Rules: a 15 s bound on the whole exchange; redirects not followed (a 3xx is a failure); only
2xx succeeds; 410 Gone disables the webhook; 429 and 503 carry `Retry-After` (seconds or an
HTTP date) to the schedule. The response body is never read.
"""

# ruff: noqa: ASYNC109  (httpcore's network backend interface takes `timeout` arguments)

from __future__ import annotations

import email.utils
import enum
import ssl
from collections.abc import Sequence
from typing import Final, Protocol

import attrs
import trio

from ._ssrf import Destination

# httpx and httpcore load at the first delivery (see the module), types for the checker only.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import httpcore

REQUEST_TIMEOUT_S: Final = 15.0
MAX_RETRY_AFTER_MS: Final = 36_000_000  # 10 h: the longest step of the schedule
USER_AGENT: Final = "maia-webhooks/1"


class SendKind(enum.Enum):
    SUCCEEDED = "succeeded"  # a 2xx
    FAILED = "failed"  # anything else: retried on the schedule
    GONE = "gone"  # 410: the receiver asked never to be called again


@attrs.frozen
class SendResult:
    """What one attempt came to: its kind, status code, Retry-After and a short reason."""

    kind: SendKind
    status_code: int | None
    reason: str
    retry_after_ms: int | None = None


class Connector(Protocol):
    """Opens the TCP connection to a checked address (tests record and refuse here)."""

    async def connect(
        self, address: str, port: int, timeout: float | None
    ) -> httpcore.AsyncNetworkStream: ...


class TcpConnector:
    """The real connector: a TCP connection through anyio (trio underneath)."""

    def __init__(self) -> None:
        self._backend: httpcore.AnyIOBackend | None = None

    async def connect(
        self, address: str, port: int, timeout: float | None
    ) -> httpcore.AsyncNetworkStream:
        if self._backend is None:
            import httpcore

            self._backend = httpcore.AnyIOBackend()
        return await self._backend.connect_tcp(address, port, timeout=timeout)


_MAX_SECONDS_DIGITS: Final = 9  # more is over 10 h anyway; never convert a huge number


def parse_retry_after(value: str | None, now_ms: int) -> int | None:
    """Milliseconds a Retry-After header asks to wait (0..10 h), or None when absent/invalid.
    Seconds are ASCII digits only (RFC 9110 delay-seconds); any number of them is capped
    without converting it (a receiver may send thousands)."""
    if value is None:
        return None
    text = value.strip()
    if text.isascii() and text.isdigit():
        if len(text.lstrip("0")) > _MAX_SECONDS_DIGITS:
            return MAX_RETRY_AFTER_MS
        return min(int(text) * 1000, MAX_RETRY_AFTER_MS)
    try:
        when = email.utils.parsedate_to_datetime(text)
    except (TypeError, ValueError):
        return None
    if when.tzinfo is None:
        return None
    return max(0, min(int(when.timestamp() * 1000) - now_ms, MAX_RETRY_AFTER_MS))


def classify(status: int, retry_after: str | None, now_ms: int) -> SendResult:
    """The meaning of a response status for the schedule (pure)."""
    if 200 <= status < 300:
        return SendResult(SendKind.SUCCEEDED, status, f"http_{status}")
    if status == 410:
        return SendResult(SendKind.GONE, status, "http_410")
    wait = parse_retry_after(retry_after, now_ms) if status in (429, 503) else None
    reason = f"redirect_{status}" if 300 <= status < 400 else f"http_{status}"
    return SendResult(SendKind.FAILED, status, reason, wait)


class WebhookClient(Protocol):
    """Sends one signed delivery and says what came of it; never raises for the network."""

    async def post(
        self, destination: Destination, headers: Sequence[tuple[str, str]], body: bytes, now_ms: int
    ) -> SendResult: ...


class HttpxClient:
    """The `WebhookClient` on httpx: one short-lived pinned connection per attempt."""

    def __init__(
        self,
        connector: Connector | None = None,
        *,
        timeout_s: float = REQUEST_TIMEOUT_S,
        ssl_context: ssl.SSLContext | None = None,
    ) -> None:
        self._connector = connector or TcpConnector()
        self._timeout_s = timeout_s
        self._ssl = ssl_context  # the system's CA store is read at the first delivery

    async def post(
        self, destination: Destination, headers: Sequence[tuple[str, str]], body: bytes, now_ms: int
    ) -> SendResult:
        import httpx

        from ._http_pinned import _PinnedTransport

        if self._ssl is None:
            self._ssl = ssl.create_default_context()
        transport = _PinnedTransport(destination, self._connector, self._ssl)
        request_headers = [("user-agent", USER_AGENT), ("content-type", "application/json")]
        request_headers += list(headers)
        with trio.move_on_after(self._timeout_s):
            try:
                async with httpx.AsyncClient(
                    transport=transport,
                    follow_redirects=False,
                    trust_env=False,
                    timeout=self._timeout_s,
                ) as client:
                    request = client.build_request(
                        "POST", destination.url, headers=request_headers, content=body
                    )
                    response = await client.send(request, stream=True)
                    await response.aclose()  # the body is never read
                    return classify(
                        response.status_code, response.headers.get("retry-after"), now_ms
                    )
            except httpx.TimeoutException:
                return SendResult(SendKind.FAILED, None, "timeout")
            except httpx.HTTPError as error:
                detail = str(error)[:200] or type(error).__name__
                return SendResult(SendKind.FAILED, None, f"connect_failed: {detail}")
            except OSError as error:
                return SendResult(SendKind.FAILED, None, f"connect_failed: {error}"[:200])
        return SendResult(SendKind.FAILED, None, "timeout")
