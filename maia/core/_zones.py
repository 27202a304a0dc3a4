"""Which names are IANA time zones: one rule for a routine's schedule and the user config's
`swarm.defaultTimezone`."""

from __future__ import annotations

import functools
import zoneinfo
from typing import Final

# Files under the zone folders that the tz database does not name: `localtime` is the host's
# own zone (a link that moves with the machine), not a zone a schedule can mean.
_NOT_ZONES: Final = frozenset({"localtime"})


@functools.cache
def _zones() -> frozenset[str]:
    # available_timezones() lists the database's zones, leaving out posixrules, right/… and
    # posix/… (copies with other leap-second rules), which ZoneInfo would still open.
    return (frozenset(zoneinfo.available_timezones()) - _NOT_ZONES) | {"UTC"}


def is_iana_time_zone(name: str) -> bool:
    """Whether `name` is an IANA time zone this machine knows (`Europe/Paris`, `UTC`)."""
    return name in _zones()
