"""The SSRF guard: which destinations a webhook may reach, judged on the address connected to.

A webhook URL names a receiver the Node will POST to, so a URL is a way to make the Node send
requests on someone's behalf. The guard refuses, with a reason a person can act on:
  * schemes other than http and https, credentials in the URL, a zone ID, a malformed host;
  * every IPv4 number form a resolver or browser would read as an address but that is not
    the canonical dotted quad (`2130706433`, `0177.0.0.1`, `0x7f.1`, `127.1`): such a host
    is refused whatever it denotes, and the reason names the address it denotes;
  * addresses that are not public: loopback, private, link-local, CGNAT (shared), multicast,
    reserved, documentation, benchmarking, unspecified, and IPv6 forms that carry an IPv4
    address (mapped, compatible, NAT64, 6to4) when that address is refused, or always for
    mapped, compatible and translated forms (write the IPv4 address itself), and the rest
    of ::/8, which IANA reserves (but NAT64's 64:ff9b::/96, judged by its IPv4 address);
An allow-list of CIDRs (`webhooks.allowAddresses` in config.jsonc) admits an address the
rules refuse, such as a local receiver on 127.0.0.1; it matches the address as resolved, in
its own family (an IPv4 entry never admits `::ffff:127.0.0.1`).

A name is resolved once, through an injectable resolver; every address it yields must pass,
and the delivery connects to the first of them: `Destination.address` is what `_http` dials,
with the name kept for the Host header and TLS SNI, so there is no second resolution for a
rebinding DNS server to answer differently.
"""

from __future__ import annotations

import ipaddress
import re
import socket
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import Final

import attrs
import trio

# httpx's URL parser loads with the first URL checked: an idle Node does not import httpx.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import httpx

IPAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network
Resolver = Callable[[str, int], Awaitable[Sequence[str]]]

MAX_URL_LENGTH: Final = 2048
MAX_RESOLVED: Final = 16
RESOLVE_TIMEOUT_S: Final = 5.0

_V4 = ipaddress.IPv4Network
_V6 = ipaddress.IPv6Network
# Refused IPv4 ranges and the reason each is named by (IANA special-purpose registry).
_V4_BLOCKED: Final[tuple[tuple[ipaddress.IPv4Network, str], ...]] = (
    (_V4("0.0.0.0/8"), "unspecified"),
    (_V4("10.0.0.0/8"), "private"),
    (_V4("100.64.0.0/10"), "cgnat"),
    (_V4("127.0.0.0/8"), "loopback"),
    (_V4("169.254.0.0/16"), "link-local"),
    (_V4("172.16.0.0/12"), "private"),
    (_V4("192.0.0.0/24"), "reserved"),
    (_V4("192.0.2.0/24"), "documentation"),
    (_V4("192.88.99.0/24"), "reserved"),
    (_V4("192.168.0.0/16"), "private"),
    (_V4("198.18.0.0/15"), "benchmarking"),
    (_V4("198.51.100.0/24"), "documentation"),
    (_V4("203.0.113.0/24"), "documentation"),
    (_V4("224.0.0.0/4"), "multicast"),
    (_V4("240.0.0.0/4"), "reserved"),
)
_V6_BLOCKED: Final[tuple[tuple[ipaddress.IPv6Network, str], ...]] = (
    (_V6("::/128"), "unspecified"),
    (_V6("::1/128"), "loopback"),
    (_V6("::ffff:0:0/96"), "ipv4-mapped"),
    (_V6("::/96"), "ipv4-compatible"),
    (_V6("::ffff:0:0:0/96"), "ipv4-translated"),  # RFC 2765's ::ffff:0:a.b.c.d
    (_V6("64:ff9b:1::/48"), "nat64-local"),
    (_V6("100::/64"), "reserved"),
    (_V6("2001::/23"), "reserved"),
    (_V6("2001:db8::/32"), "documentation"),
    (_V6("3fff::/20"), "documentation"),
    (_V6("5f00::/16"), "reserved"),
    (_V6("fc00::/7"), "private"),
    (_V6("fe80::/10"), "link-local"),
    (_V6("fec0::/10"), "site-local"),
    (_V6("ff00::/8"), "multicast"),
)
_NAT64: Final = _V6("64:ff9b::/96")
_IETF_RESERVED: Final = _V6("::/8")  # IANA: reserved by the IETF (NAT64's prefix lies in it)
_SIXTOFOUR: Final = _V6("2002::/16")
# Each used with `fullmatch`: `match` with `$` lets a trailing newline through.
_NUMBER_LABEL: Final = re.compile(r"0[xX][0-9a-fA-F]*|[0-9]+")
_DNS_LABEL: Final = re.compile(r"(?!-)[a-z0-9-]{1,63}(?<!-)")
_CANONICAL_V4: Final = re.compile(r"(0|[1-9][0-9]{0,2})(\.(0|[1-9][0-9]{0,2})){3}")


class DestinationRefused(ValueError):
    """A webhook destination the guard refuses; `reason` is a short code, str() explains."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message


@attrs.frozen
class Target:
    """A URL that passed the syntax rules: its parts, and its address when it is a literal."""

    url: str
    scheme: str
    host: str  # ASCII (IDNA) name or address text, without brackets
    port: int
    literal: IPAddress | None


@attrs.frozen
class Destination:
    """A checked destination: connect to `address`; send `host` as Host and TLS SNI."""

    target: Target
    address: str

    @property
    def url(self) -> str:
        return self.target.url


def parse_allow_addresses(values: Iterable[str]) -> tuple[IPNetwork, ...]:
    """CIDRs from `webhooks.allowAddresses`. Raises ValueError naming the bad entry's index."""
    networks: list[IPNetwork] = []
    for index, value in enumerate(values):
        try:
            networks.append(ipaddress.ip_network(value, strict=True))
        except ValueError as error:
            raise ValueError(f"[{index}]: {value!r} is not a CIDR ({error})") from None
    return tuple(networks)


def blocked_class(address: IPAddress) -> str | None:
    """The reason `address` is refused (loopback, private, ...), or None for a public one."""
    if isinstance(address, ipaddress.IPv4Address):
        for network, name in _V4_BLOCKED:
            if address in network:
                return name
        return None if address.is_global else "reserved"
    for network6, name in _V6_BLOCKED:
        if address in network6:
            return name
    embedded = _embedded_v4(address)
    if embedded is not None and blocked_class(embedded) is not None:
        return f"embedded {blocked_class(embedded)} ({embedded})"
    if address in _IETF_RESERVED and address not in _NAT64:  # is_global misses ::/8's rest
        return "reserved"
    return None if address.is_global else "reserved"


def _embedded_v4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    if address in _NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    if address in _SIXTOFOUR:
        return address.sixtofour
    return None


def _a(word: str) -> str:
    """`word` after its indefinite article: "a loopback", "an unspecified"."""
    return f"{'an' if word[0] in 'aeiou' else 'a'} {word}"


def admit(address: IPAddress, allow: Sequence[IPNetwork], shown: str) -> None:
    """Raise DestinationRefused unless `address` is public or inside the allow-list."""
    if any(address.version == net.version and address in net for net in allow):
        return
    reason = blocked_class(address)
    if reason is not None:
        raise DestinationRefused(
            reason.split(" ")[0],
            f"{shown} is {_a(reason)} address; webhooks reach public addresses only "
            "(webhooks.allowAddresses in config.jsonc admits others)",
        )


def _ipv4_number_form(host: str) -> ipaddress.IPv4Address | None:
    """The address a WHATWG URL parser (and inet_aton) reads in `host`, or None if it is a
    name. Raises DestinationRefused when the last label is a number but the host no address."""
    labels = host.split(".")
    if labels[-1] == "" and len(labels) > 1:
        labels = labels[:-1]
    if not _NUMBER_LABEL.fullmatch(labels[-1]):
        return None
    invalid = DestinationRefused("host_invalid", f"host {host!r} is not a valid IPv4 address")
    if len(labels) > 4 or not all(_NUMBER_LABEL.fullmatch(label) for label in labels):
        raise invalid
    numbers: list[int] = []
    for label in labels:
        try:
            if label[:2].lower() == "0x":
                numbers.append(int(label[2:] or "0", 16))
            elif len(label) > 1 and label.startswith("0"):
                numbers.append(int(label, 8))
            else:
                numbers.append(int(label))
        except ValueError:
            raise invalid from None
    *head, last = numbers
    if any(n > 255 for n in head) or last >= 256 ** (5 - len(numbers)):
        raise invalid
    value = last
    for i, n in enumerate(head):
        value += n << (8 * (3 - i))
    return ipaddress.IPv4Address(value)


def _host_of(url: httpx.URL, text: str) -> tuple[str, IPAddress | None]:
    raw = url.raw_host
    if not raw:
        raise DestinationRefused("host_invalid", f"{text!r} has no host")
    try:
        host = raw.decode("ascii").lower()
    except UnicodeDecodeError:
        raise DestinationRefused("host_invalid", f"host of {text!r} is not ASCII") from None
    if ":" in host:  # an IPv6 literal (httpx took it from inside brackets)
        if "%" in host:
            raise DestinationRefused("host_invalid", f"{host!r}: zone IDs are refused")
        try:
            return host, ipaddress.IPv6Address(host)
        except ValueError:
            raise DestinationRefused("host_invalid", f"{host!r} is not an IPv6 address") from None
    number = _ipv4_number_form(host)
    if number is not None:
        if not _CANONICAL_V4.fullmatch(host):
            where = blocked_class(number)
            what = f"{_a(where)} address" if where else "an address"
            raise DestinationRefused(
                where or "host_noncanonical",
                f"host {host!r} is {what} ({number}) in a non-canonical IPv4 form; "
                "write addresses as four decimal numbers",
            )
        return host, number
    name = host[:-1] if host.endswith(".") else host
    if len(name) > 253 or not all(_DNS_LABEL.fullmatch(label) for label in name.split(".")):
        raise DestinationRefused("host_invalid", f"host {host!r} is not a valid DNS name")
    return name, None


def _shown(url: str) -> str:
    """`url` as a refusal may echo it: everything up to its last '@' (a password) cut out.

    The cut does not trust the authority to end at the first '/', '?' or '#': a careless
    password may hold one, and then the parser refuses the URL for another reason. A URL
    with no '//' (`ftp:user:pw@host`) is cut after its scheme's ':'.
    """
    if "@" not in url:
        return url
    scheme, sep, rest = url.partition("//")
    if not sep:
        scheme, sep, rest = url.partition(":")
        if not sep:
            return "…@" + url.rpartition("@")[2]
    return f"{scheme}{sep}…@{rest.rpartition('@')[2]}"


def check_url(url: str, allow: Sequence[IPNetwork] = ()) -> Target:
    """The URL's target after the rules that need no resolution (literal addresses included).

    Raises DestinationRefused: scheme, credentials, malformed host or port, a refused literal.
    """
    if len(url) > MAX_URL_LENGTH:
        raise DestinationRefused("url_invalid", f"the URL is over {MAX_URL_LENGTH} characters")
    import httpx

    try:
        parsed = httpx.URL(url)
    except httpx.InvalidURL as error:
        raise DestinationRefused("url_invalid",
                                 f"{_shown(url)!r} is not a URL: {error}") from None  # fmt: skip
    if parsed.scheme not in ("http", "https"):
        raise DestinationRefused(
            "scheme",
            f"{_shown(url)!r}: only http and https are allowed, not {parsed.scheme or 'none'}",
        )
    if parsed.userinfo or "@" in url.split("//", 1)[-1].split("/", 1)[0]:
        # The URL is not echoed: its userinfo is a password (refusals reach terminals and logs).
        raise DestinationRefused(
            "credentials",
            "credentials in the URL (user:password@ before "
            "the host) are refused; the receiver verifies the signature",
        )
    if len(str(parsed)) > MAX_URL_LENGTH:  # what is stored and shown: `"` becomes `%22`
        raise DestinationRefused(
            "url_invalid",
            f"the URL is over {MAX_URL_LENGTH} characters once percent-encoded "
            f"({len(str(parsed))}); encode it shorter",
        )
    host, literal = _host_of(parsed, url)
    default = 443 if parsed.scheme == "https" else 80
    port = parsed.port if parsed.port is not None else default
    if not 1 <= port <= 65535:
        raise DestinationRefused("port_invalid", f"{_shown(url)!r}: port {port} is out of range")
    if literal is not None:
        admit(literal, allow, str(literal))
    return Target(str(parsed), parsed.scheme, host, port, literal)


async def system_resolver(host: str, port: int) -> Sequence[str]:
    """The OS resolver (getaddrinfo), bounded in time. Raises OSError when it finds nothing."""
    with trio.fail_after(RESOLVE_TIMEOUT_S):
        infos = await trio.socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    return [str(info[4][0]) for info in infos]


async def resolve_destination(
    url: str, allow: Sequence[IPNetwork] = (), resolver: Resolver = system_resolver
) -> Destination:
    """Check `url`, resolve its name once, and check every address it yields.

    Raises DestinationRefused (a rule, or resolution failed or yielded nothing usable).
    """
    target = check_url(url, allow)
    if target.literal is not None:
        return Destination(target, str(target.literal))
    try:
        found = await resolver(target.host, target.port)
    except (OSError, trio.TooSlowError) as error:
        raise DestinationRefused(
            "resolution_failed", f"{target.host} did not resolve: {error}"
        ) from None
    addresses: list[IPAddress] = []
    for text in list(found)[:MAX_RESOLVED]:
        try:
            address = ipaddress.ip_address(text.split("%", 1)[0])
        except ValueError:
            raise DestinationRefused(
                "resolution_failed", f"{target.host} resolved to {text!r}, not an address"
            ) from None
        admit(address, allow, f"{target.host} resolves to {address}, which")
        addresses.append(address)
    if not addresses:
        raise DestinationRefused("resolution_failed", f"{target.host} has no address")
    return Destination(target, str(addresses[0]))
