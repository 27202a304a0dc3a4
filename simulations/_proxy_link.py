"""What the fault proxy does to one message: the knobs of a direction and the seeded choice.

Each (connection, direction) has its own `random.Random` seeded from the proxy's seed, and
every message draws exactly four numbers whatever the knobs are: the k-th message of a
direction meets the same rolls on every run with that seed, so switching faults at run time
never shifts the later draws, and a run with the same traffic replays its decisions.
"""

from __future__ import annotations

import enum
import ipaddress
import random

import attrs
import trio

MAX_DELAY_MS = 60_000


class ProxyError(ValueError):
    """A proxy setting refused; names the field."""

    def __init__(self, field: str, detail: str) -> None:
        super().__init__(f"{field}: {detail}")
        self.field = field
        self.detail = detail


class NotLoopback(ProxyError):
    """The proxy listens on and forwards to loopback addresses only."""


def loopback_host(field: str, host: str) -> str:
    """`host` if it is a loopback IP literal (127.0.0.0/8, ::1); names are refused, since a
    name may resolve anywhere."""
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        raise NotLoopback(field, f"{host!r} is not an IP address (loopback only)") from None
    if not address.is_loopback:
        raise NotLoopback(field, f"{host} is not a loopback address")
    return host


class Direction(enum.Enum):
    """The Execution Node dials out to the Control Node, so the proxy's client is the Node."""

    TO_CONTROL = "to_control"  # client -> target
    TO_NODE = "to_node"  # target -> client

    @classmethod
    def of(cls, value: Direction | str) -> Direction:
        try:
            return cls(value)
        except ValueError:
            known = [d.value for d in cls]
            raise ProxyError("direction", f"{value!r} is not one of {known}") from None


class Fate(enum.Enum):
    FORWARDED = "forwarded"
    LOST = "lost"  # dropped by the loss knob
    PARTITIONED = "partitioned"  # dropped by a partition
    DUPLICATED = "duplicated"  # forwarded twice
    REORDERED = "reordered"  # held back and sent after the next message
    REFUSED = "refused"  # unparsable or too large: the connection is closed


@attrs.frozen
class LinkFaults:
    """One direction's knobs: a delay drawn from `delay_ms` (inclusive), the probabilities
    of loss, duplication and reordering."""

    delay_ms: tuple[int, int] = (0, 0)
    loss: float = 0.0
    duplicate: float = 0.0
    reorder: float = 0.0

    def __attrs_post_init__(self) -> None:
        low, high = self.delay_ms
        if not 0 <= low <= high <= MAX_DELAY_MS:
            raise ProxyError("delay_ms", f"need 0 <= low <= high <= {MAX_DELAY_MS}")
        for name in ("loss", "duplicate", "reorder"):
            value = getattr(self, name)
            if not 0.0 <= value <= 1.0:
                raise ProxyError(name, f"a probability in [0, 1], not {value!r}")


CLEAN = LinkFaults()


@attrs.frozen
class Decision:
    fate: Fate
    delay_ms: int = 0

    @property
    def copies(self) -> int:
        return {Fate.LOST: 0, Fate.PARTITIONED: 0, Fate.DUPLICATED: 2}.get(self.fate, 1)


def link_rng(seed: int, connection: int, direction: Direction) -> random.Random:
    return random.Random(f"{seed}/{connection}/{direction.value}")


def decide(rng: random.Random, faults: LinkFaults, partitioned: bool) -> Decision:
    """One message's fate (always four draws, see the module docstring)."""
    loss, duplicate, reorder, delay = (rng.random() for _ in range(4))
    if partitioned:
        return Decision(Fate.PARTITIONED)
    if loss < faults.loss:
        return Decision(Fate.LOST)
    low, high = faults.delay_ms
    ms = min(high, low + int(delay * (high - low + 1)))
    if duplicate < faults.duplicate:
        return Decision(Fate.DUPLICATED, ms)
    if reorder < faults.reorder:
        return Decision(Fate.REORDERED, ms)
    return Decision(Fate.FORWARDED, ms)


@attrs.define
class Switchboard:
    """The knobs a test turns while traffic flows; every connection reads them per message."""

    faults: dict[Direction, LinkFaults] = attrs.Factory(lambda: dict.fromkeys(Direction, CLEAN))
    partitioned: set[Direction] = attrs.Factory(set)
    # Text messages containing this are lost, per direction: a test drops one kind of frame
    # (a worker's `initialized`, say) without racing the process that sends it.
    dropping: dict[Direction, str] = attrs.Factory(dict)
    healed: trio.Event = attrs.Factory(trio.Event)  # set (and renewed) by every heal

    def set_faults(self, direction: Direction | str | None, faults: LinkFaults) -> None:
        for each in Direction if direction is None else (Direction.of(direction),):
            self.faults[each] = faults

    def partition(self, one_way: Direction | str | None = None) -> None:
        self.partitioned |= set(Direction) if one_way is None else {Direction.of(one_way)}

    def drop_containing(self, direction: Direction | str, text: str | None) -> None:
        """Lose every text message toward `direction` that contains `text` (None: stop)."""
        if text is None:
            self.dropping.pop(Direction.of(direction), None)
        else:
            self.dropping[Direction.of(direction)] = text

    def drops(self, direction: Direction, payload: bytes | str) -> bool:
        text = self.dropping.get(direction)
        if text is None:
            return False
        return text in (payload if isinstance(payload, str) else payload.decode("utf-8", "replace"))

    def heal(self) -> None:
        self.partitioned.clear()
        self.dropping.clear()
        self.faults = dict.fromkeys(Direction, CLEAN)
        self.healed.set()
        self.healed = trio.Event()

    @property
    def isolated(self) -> bool:
        """Any partition stands: a new connection's handshake cannot pass."""
        return bool(self.partitioned)


@attrs.frozen
class ProxyEvent:
    """One message's decision, as recorded; `at_ms` is the host's monotonic clock."""

    at_ms: int
    connection: int
    direction: Direction
    sequence: int
    kind: str
    size: int
    fate: Fate
    delay_ms: int

    @property
    def decision(self) -> tuple[int, str, int, str, str, int]:
        """Everything but the time: what a replay from the same seed reproduces."""
        return (
            self.connection,
            self.direction.value,
            self.sequence,
            self.kind,
            self.fate.value,
            self.delay_ms,
        )
