"""The SSRF guard: a table of refused destinations, run through the whole send path with a
connector double that records and refuses every attempt (no socket is ever opened here)."""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from actors.webhook import (
    DestinationRefused,
    HttpxClient,
    IPNetwork,
    SendKind,
    blocked_class,
    check_url,
    parse_allow_addresses,
    resolve_destination,
)
from actors.webhook._ssrf import _host_of

from ._receiver import RefusingConnector, static_resolver

NAMES = {
    "private.test": ["10.1.2.3"],
    "metadata.test": ["169.254.169.254"],
    "mixed.test": ["93.184.215.14", "192.168.0.5"],
    "loop6.test": ["::1"],
    "mapped.test": ["::ffff:10.0.0.1"],
    "localhost": ["127.0.0.1"],
    "public.test": ["93.184.215.14"],
    "garbage.test": ["not-an-address"],
    "empty.test": [],
}
RESOLVER = static_resolver(NAMES)
LOOPBACK_ONLY = parse_allow_addresses(["127.0.0.1/32"])

# (url, the reason code the guard gives)
REFUSED: list[tuple[str, str]] = [
    ("http://127.0.0.1/", "loopback"),
    ("http://127.0.0.2:8080/hook", "loopback"),
    ("http://2130706433/", "loopback"),  # 127.0.0.1 in decimal
    ("http://2130706434/", "loopback"),  # 127.0.0.2 in decimal
    ("http://0177.0.0.1/", "url_invalid"),  # octal: httpx's parser refuses it outright
    ("http://017700000001/", "loopback"),  # octal, one number
    ("http://0x7f.0.0.1/", "loopback"),  # hex first byte
    ("http://0x7f000001/", "loopback"),  # hex, one number
    ("http://0x7f.0x0.0x0.0x2/", "loopback"),
    ("http://127.1/", "loopback"),  # short form
    ("http://127.0.0.1./", "loopback"),  # trailing dot
    ("http://0/", "unspecified"),
    ("http://0.0.0.0/", "unspecified"),
    ("http://10.0.0.1/", "private"),
    ("http://172.16.5.4/", "private"),
    ("http://192.168.1.1/", "private"),
    ("http://169.254.169.254/latest/meta-data/", "link-local"),
    ("http://100.64.0.1/", "cgnat"),
    ("http://224.0.0.1/", "multicast"),
    ("http://240.0.0.1/", "reserved"),
    ("http://255.255.255.255/", "reserved"),
    ("http://192.0.2.7/", "documentation"),
    ("http://198.18.0.1/", "benchmarking"),
    ("http://0x08080808/", "host_noncanonical"),  # public, but not written as a dotted quad
    ("http://[::1]/", "loopback"),
    ("http://[0:0:0:0:0:0:0:1]:9000/", "loopback"),
    ("http://[::]/", "unspecified"),
    ("http://[::ffff:127.0.0.1]/", "ipv4-mapped"),
    ("http://[::ffff:7f00:2]/", "ipv4-mapped"),
    ("http://[::ffff:169.254.169.254]/", "ipv4-mapped"),
    ("http://[::ffff:8.8.8.8]/", "ipv4-mapped"),  # mapped forms always: write the IPv4
    ("http://[::127.0.0.1]/", "ipv4-compatible"),
    ("http://[fe80::1]/", "link-local"),
    ("http://[fe80::1%25eth0]/", "host_invalid"),  # zone ID
    ("http://[fc00::1]/", "private"),
    ("http://[fd12:3456::1]/", "private"),
    ("http://[ff02::1]/", "multicast"),
    ("http://[64:ff9b::a00:1]/", "embedded"),  # NAT64 of 10.0.0.1
    ("http://[2002:c0a8:101::1]/", "embedded"),  # 6to4 of 192.168.1.1
    ("http://[2001:db8::1]/", "documentation"),
    ("http://[2001::1]/", "reserved"),  # Teredo
    ("http://private.test/", "private"),  # a name resolving to a private address
    ("http://metadata.test/", "link-local"),
    ("http://mixed.test/", "private"),  # one bad address refuses the name
    ("http://loop6.test/", "loopback"),
    ("http://mapped.test/", "ipv4-mapped"),
    ("http://localhost:8080/", "loopback"),
    ("http://garbage.test/", "resolution_failed"),
    ("http://empty.test/", "resolution_failed"),
    ("http://nowhere.test/", "resolution_failed"),
    ("ftp://93.184.215.14/", "scheme"),
    ("file:///etc/passwd", "scheme"),
    ("gopher://93.184.215.14:70/", "scheme"),
    ("http://user:secret@93.184.215.14/", "credentials"),
    ("http://93.184.215.14@127.0.0.1/", "credentials"),
    ("http:///nohost", "host_invalid"),
    ("http://bad_name.test/", "host_invalid"),
    ("http://a.0x7f/", "host_invalid"),  # ends in a number but is no address
    ("http://256.1.1.1/", "url_invalid"),
    ("http://1.256/", "host_noncanonical"),  # WHATWG reads 1.0.1.0
    ("http://1.2.3.4.5/", "host_invalid"),
    ("http://0x1.099/", "host_invalid"),  # 099 is no octal number
    ("http://93.184.215.14:0/", "port_invalid"),
    ("http://93.184.215.14:70000/", "port_invalid"),
]


async def _attempt(
    url: str, connector: RefusingConnector, allow: Sequence[IPNetwork] = ()
) -> SendKind:
    """The send path a delivery takes: resolve and check, then post through the connector."""
    destination = await resolve_destination(url, allow, RESOLVER)
    result = await HttpxClient(connector).post(destination, (), b"{}", 0)
    return result.kind


@pytest.mark.parametrize(("url", "reason"), REFUSED)
async def test_refused_destination_makes_no_connection(url: str, reason: str) -> None:
    """Each destination is refused with its reason before any connection is attempted."""
    connector = RefusingConnector()
    with pytest.raises(DestinationRefused) as refused:
        await _attempt(url, connector)
    assert refused.value.reason == reason, refused.value.message
    assert connector.attempts == []


def test_the_table_is_big_enough() -> None:
    """The issue asks for at least 30 refused destinations."""
    assert len(REFUSED) >= 30


async def test_public_destination_reaches_the_connector() -> None:
    """A public address passes the guard and is dialled as checked (the double refuses it),
    so the table above would see a broken guard as a recorded attempt."""
    connector = RefusingConnector()
    kind = await _attempt("http://public.test:8443/x", connector)
    assert kind is SendKind.FAILED
    assert connector.attempts == [("93.184.215.14", 8443)]


@pytest.mark.parametrize(
    "url",
    [
        "http://127.0.0.2/",
        "http://[::1]/",
        "http://2130706433/",  # 127.0.0.1 itself, but written in decimal
        "http://0x7f.1/",
        "http://[::ffff:127.0.0.1]/",
    ],
)
async def test_allow_list_admits_only_its_own_addresses(url: str) -> None:
    """With 127.0.0.1/32 allowed, other loopback addresses and other forms stay refused."""
    connector = RefusingConnector()
    with pytest.raises(DestinationRefused):
        await _attempt(url, connector, LOOPBACK_ONLY)
    assert connector.attempts == []


async def test_allow_list_admits_a_local_receiver() -> None:
    """127.0.0.1 inside the allow-list is admitted, named or literal."""
    for url in ("http://127.0.0.1:9/", "http://localhost:9/"):
        connector = RefusingConnector()
        await _attempt(url, connector, LOOPBACK_ONLY)
        assert connector.attempts == [("127.0.0.1", 9)]


def test_literal_refused_without_resolution() -> None:
    """`check_url` refuses a literal address at add time; a name passes until resolved."""
    with pytest.raises(DestinationRefused):
        check_url("http://10.0.0.1/")
    target = check_url("https://Hooks.Example.com./in?x=1")
    assert (target.host, target.port, target.literal) == ("hooks.example.com", 443, None)


def test_allow_addresses_are_cidrs() -> None:
    """A bad allow-list entry is named by its index."""
    with pytest.raises(ValueError, match=r"\[1\]"):
        parse_allow_addresses(["127.0.0.1/32", "127.0.0.1/8"])


@pytest.mark.parametrize("text", ["8.8.8.8", "1.1.1.1", "2606:4700:4700::1111", "93.184.215.14"])
def test_public_addresses_are_not_blocked(text: str) -> None:
    """Public addresses have no blocked class."""
    assert blocked_class(ipaddress.ip_address(text)) is None


def _forms(value: int) -> list[str]:
    """Every non-canonical IPv4 number form a parser might read as `value`."""
    a, b, c, d = value.to_bytes(4, "big")
    return [
        str(value),
        hex(value),
        "0" + format(value, "o"),
        f"{a}.{(b << 16) | (c << 8) | d}",
        f"{a}.{b}.{(c << 8) | d}",
        f"0x{a:x}.{b}.{c}.{d}",
        f"0{a:o}.{b}.{c}.{d}",
    ]


REFUSED_RANGES = ["127.0.0.0/8", "10.0.0.0/8", "169.254.0.0/16", "192.168.0.0/16",
                  "100.64.0.0/10", "0.0.0.0/8", "224.0.0.0/4"]  # fmt: skip


@given(
    st.sampled_from(REFUSED_RANGES),
    st.integers(0, 2**32 - 1),
    st.data(),
)
@settings(max_examples=200)
def test_number_forms_of_refused_addresses_are_refused(
    cidr: str, offset: int, data: st.DataObject
) -> None:
    """Any address of a refused range, in any number form, is refused before resolution."""
    network = ipaddress.IPv4Network(cidr)
    address = int(network.network_address) + offset % network.num_addresses
    form = data.draw(st.sampled_from(_forms(address)))
    with pytest.raises(DestinationRefused):
        check_url(f"http://{form}:8080/")


@given(st.text(alphabet="0123456789abcdefx.:[]%@/", max_size=40))
@settings(max_examples=300)
def test_any_host_text_is_judged_without_surprises(host: str) -> None:
    """Whatever the host text, the guard either returns a target or refuses; a returned
    literal is public."""
    try:
        target = check_url(f"http://{host}/")
    except DestinationRefused:
        return
    if target.literal is not None:
        assert blocked_class(target.literal) is None


class _ParsedHost:
    """A parsed URL's host as a parser that let a newline through would give it (httpx
    refuses the character today: the guard's own rules must not lean on that)."""

    def __init__(self, host: str) -> None:
        self.raw_host = host.encode("ascii")


@pytest.mark.parametrize("host", ["example.com\n", "8.8.8.8\n", "93.184.215.14\n",
                                  "public.test.\n", "8.8.8.8\n.example.com"])  # fmt: skip
def test_a_host_ending_in_a_newline_is_refused(host: str) -> None:
    """The host rules match whole labels (`fullmatch`): `$` let a trailing newline pass, so
    `8.8.8.8\\n` read as a canonical address and `example.com\\n` as a DNS name."""
    with pytest.raises(DestinationRefused) as refused:
        _host_of(_ParsedHost(host), f"http://{host}/")  # type: ignore[arg-type]
    assert refused.value.reason == "host_invalid", refused.value.message


@pytest.mark.parametrize(("host", "name", "literal"), [
    ("example.com", "example.com", None), ("public.test.", "public.test", None),
    ("8.8.8.8", "8.8.8.8", ipaddress.IPv4Address("8.8.8.8")),
])  # fmt: skip
def test_a_host_without_the_newline_still_passes(
    host: str, name: str, literal: ipaddress.IPv4Address | None
) -> None:
    """The same hosts without the newline are a name and an address, as before."""
    assert _host_of(_ParsedHost(host), f"http://{host}/") == (name, literal)  # type: ignore[arg-type]


def test_the_url_limit_holds_for_the_url_as_parsed() -> None:
    """2,048 characters bound the URL as stored and shown (percent-encoded), not only as
    given: `"` is `%22`, so 675 of them after a 21-character base pass (2,046) and 676 do
    not (2,049)."""
    base = "http://93.184.215.14/"
    assert len(check_url(base + '"' * 675).url) == 2046
    with pytest.raises(DestinationRefused) as refused:
        check_url(base + '"' * 676)
    assert refused.value.reason == "url_invalid"
    assert "percent-encoded (2049)" in refused.value.message


@pytest.mark.parametrize(
    ("url", "said"),
    [("http://0/", "is an unspecified address (0.0.0.0) in a non-canonical IPv4 form"),
     ("http://0x7f.1/", "is a loopback address (127.0.0.1) in a non-canonical IPv4 form"),
     ("http://0.0.0.0/", "0.0.0.0 is an unspecified address;"),
     ("http://[::ffff:a00:1]/", "is an ipv4-mapped address;")],
)  # fmt: skip
def test_a_refusal_reads_as_english(url: str, said: str) -> None:
    """The refusal names the class with its article: an unspecified, a loopback address."""
    with pytest.raises(DestinationRefused) as caught:
        check_url(url)
    assert said in caught.value.message
