"""`wss://` for the machine link, with the Control Node's certificate pinned by fingerprint.

Control listens with TLS when given a certificate and its key (`--machines-cert FILE
--machines-key FILE`, PEM; a self-signed one is enough). Its fingerprint, the sha256 of
the certificate's DER bytes in lowercase hex (`openssl x509 -noout -fingerprint -sha256`
prints the same bytes with colons), goes into every enrollment token, and the Execution
Node stores it beside its credential. The Execution Node trusts no CA and checks no host
name: after the TLS handshake, before any HTTP byte (so before its bearer secret), it
compares the certificate Control presented with the pinned fingerprint and, on a
mismatch, closes the connection naming both (`PinMismatch`). TLS 1.2 at least.
"""

from __future__ import annotations

import hashlib
import re
import ssl
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from urllib.parse import urlsplit

import attrs
import trio
from trio_websocket import WebSocketConnection, open_websocket_url, wrap_client_stream

_PEM_CERT = re.compile(r"-----BEGIN CERTIFICATE-----.+?-----END CERTIFICATE-----", re.DOTALL)


class PinMismatch(Exception):
    """The server's certificate is not the pinned one: nothing was sent to it."""


class TlsFilesInvalid(ValueError):
    """The certificate or key cannot serve TLS (the message names the file)."""


@attrs.frozen
class ListenerTls:
    """What a TLS listener serves with, and the fingerprint tokens carry."""

    context: ssl.SSLContext
    fingerprint: str


def certificate_fingerprint(der: bytes) -> str:
    return hashlib.sha256(der).hexdigest()


def listener_tls(cert: Path, key: Path) -> ListenerTls:
    """The server context of `cert` (PEM, its first certificate is Control's) and `key`.
    Raises `TlsFilesInvalid` naming the file that is unreadable or does not match."""
    try:
        pem = cert.read_text()
    except (OSError, UnicodeDecodeError) as error:
        raise TlsFilesInvalid(f"--machines-cert {cert}: cannot read it ({error})") from None
    found = _PEM_CERT.search(pem)
    if found is None:
        raise TlsFilesInvalid(f"--machines-cert {cert}: holds no PEM certificate")
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    try:
        context.load_cert_chain(cert, key)
    except (OSError, ssl.SSLError) as error:
        raise TlsFilesInvalid(f"--machines-key {key}: does not serve {cert} ({error})") from None
    der = ssl.PEM_cert_to_DER_cert(found.group(0))
    return ListenerTls(context, certificate_fingerprint(der))


def _client_context() -> ssl.SSLContext:
    """Encryption without CA trust: the pin is checked by hand, right after the handshake."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.minimum_version = ssl.TLSVersion.TLSv1_2
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    return context


async def open_pinned_stream(host: str, port: int, fingerprint: str,
                             timeout_s: float) -> trio.SSLStream[trio.SocketStream]:  # fmt: skip
    """A TLS stream to `host:port` whose certificate has `fingerprint`. Raises
    `PinMismatch` (the connection closed, no application byte sent) when it has another."""
    with trio.fail_after(timeout_s):
        tcp = await trio.open_tcp_stream(host, port)
        stream = trio.SSLStream(tcp, _client_context(), server_hostname=host)
        try:
            await stream.do_handshake()
        except BaseException:
            await trio.aclose_forcefully(stream)
            raise
    der = stream.getpeercert(binary_form=True)
    presented = certificate_fingerprint(der) if der else "none"
    if presented != fingerprint:
        await trio.aclose_forcefully(stream)
        raise PinMismatch(f"the Control Node at {host}:{port} presented certificate sha256 "
                          f"{presented}, not the pinned {fingerprint}: nothing was sent "
                          "(enroll again if its certificate changed)")  # fmt: skip
    return stream


@asynccontextmanager
async def open_link(url: str, path: str, headers: list[tuple[bytes, bytes]],
                    fingerprint: str | None, *, max_message_size: int,
                    connect_timeout: float) -> AsyncIterator[WebSocketConnection]:  # fmt: skip
    """A WebSocket to `url` + `path`: plain for ws://, pinned TLS for wss://."""
    parts = urlsplit(url)
    if parts.scheme == "ws":
        async with open_websocket_url(url.rstrip("/") + path, extra_headers=headers,
                                      max_message_size=max_message_size,
                                      connect_timeout=connect_timeout,
                                      disconnect_timeout=2) as socket:  # fmt: skip
            yield socket
        return
    assert fingerprint is not None
    assert parts.hostname is not None
    port = parts.port or 443
    stream = await open_pinned_stream(parts.hostname, port, fingerprint, connect_timeout)
    async with trio.open_nursery() as nursery:
        with trio.fail_after(connect_timeout):
            socket = await wrap_client_stream(nursery, stream, parts.netloc, path,
                                              extra_headers=headers,
                                              max_message_size=max_message_size)  # fmt: skip
        try:
            yield socket
        finally:
            with trio.move_on_after(2) as cleanup:
                cleanup.shield = True
                await socket.aclose()
            nursery.cancel_scope.cancel()
