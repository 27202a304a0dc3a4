"""The webhook SSRF guard refuses every IPv6 form in ::/8 that is not a public address
(IANA reserves ::/8): the IPv4-translated form `::ffff:0:a.b.c.d` (RFC 2765) of a loopback
address was admitted (Python's `is_global` leaves ::/8 out), at add and after resolution.
Nothing is sent: the checks run before any connection, the resolver is injected."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from actors.webhook._ssrf import DestinationRefused, check_url, resolve_destination


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://[::ffff:0:7f00:1]/in", "ipv4-translated"),  # ::ffff:0:127.0.0.1
        ("http://[::ffff:0:a00:1]/in", "ipv4-translated"),  # ::ffff:0:10.0.0.1
        ("http://[::ffff:0:808:808]/in", "ipv4-translated"),  # ::ffff:0:8.8.8.8: write 8.8.8.8
        ("http://[::1:2:3:4]/in", "reserved"),
        ("http://[0:0:0:1::]/in", "reserved"),
    ],
)
def test_a_literal_in_colon_colon_slash_8_is_refused_at_add(url: str, reason: str) -> None:
    """The literal is refused with its reason before anything resolves or connects."""
    with pytest.raises(DestinationRefused) as refused:
        check_url(url)
    assert refused.value.reason == reason


async def test_a_name_resolving_to_a_translated_loopback_is_refused() -> None:
    """A name whose resolver answers ::ffff:0:7f00:1 is refused at the attempt."""

    async def resolver(host: str, port: int) -> Sequence[str]:
        return ["::ffff:0:7f00:1"]

    with pytest.raises(DestinationRefused) as refused:
        await resolve_destination("https://hooks.example.com/in", (), resolver)
    assert refused.value.reason == "ipv4-translated"


def test_public_ipv6_and_the_allow_list_still_pass() -> None:
    """A global IPv6 address and NAT64 of a public IPv4 address (64:ff9b::/96 lies in ::/8)
    pass; an allow-list entry admits a refused one."""
    import ipaddress

    assert check_url("http://[2606:4700::1111]/in").literal is not None
    assert check_url("http://[64:ff9b::808:808]/in").literal is not None
    allow = (ipaddress.ip_network("::ffff:0:0:0/96"),)
    assert check_url("http://[::ffff:0:7f00:1]/in", allow).literal is not None


@pytest.mark.parametrize(
    ("url", "said"),
    [
        ("http://[::ffff:127.0.0.1]/", "is an ipv4-mapped address"),
        ("http://[::]/", "is an unspecified address"),
        ("http://[64:ff9b::7f00:1]/", "is an embedded loopback (127.0.0.1) address"),
        ("http://127.0.0.1/", "is a loopback address"),
    ],
)
def test_the_reason_reads_as_english(url: str, said: str) -> None:
    """The message takes "an" before a vowel ("is an ipv4-mapped address")."""
    with pytest.raises(DestinationRefused) as refused:
        check_url(url)
    assert said in str(refused.value)
