"""What a subscriber asks for: the observation query, its check, digest and matcher.

`ObservationQuery` is the spec's ObservationQueryV1 as an attrs class whose fields carry their
wire constraints, so `maia.protocol.check` refuses bad input with `validation_failed` naming
the field (unknown keys refused). Empty lists mean "all" (the local user is authorized for
every value on a single Node). The filter digest binds a cursor to the query it was issued
for: another query with the same cursor is `invalid_cursor`.
"""

from __future__ import annotations

from typing import Final

# The query classes are the observe.events op's input schema (maia.protocol), re-exported.
from maia.protocol import DOMAINS as DOMAINS
from maia.protocol import SNAPSHOT_LIMIT_DEFAULT as SNAPSHOT_LIMIT_DEFAULT
from maia.protocol import SNAPSHOT_LIMIT_MAX as SNAPSHOT_LIMIT_MAX
from maia.protocol import Classification as Classification
from maia.protocol import Domain as Domain
from maia.protocol import Importance as Importance
from maia.protocol import ObservationQuery as ObservationQuery
from maia.protocol import ObserveInput as ObserveInput

# Event types by their first word: which observation domain they belong to.
DOMAIN_OF_PREFIX: Final = {
    "session": "agent",
    "turn": "agent",
    "item": "agent",
    "tool": "agent",
    "worker": "agent",
    "project": "node",
    "node": "node",
    "routine": "scheduler",
    "schedule": "scheduler",
    "webhook": "scheduler",
    "storage": "storage",
    "lease": "security",
    "machine": "security",
}


def domain_of(event_type: str) -> str:
    """The observation domain of an event type (`node` when its prefix is not listed)."""
    return DOMAIN_OF_PREFIX.get(event_type.partition(".")[0], "node")


class Matcher:
    """Decides, fast, whether a record passes a query (sets built once)."""

    __slots__ = ("_classes", "_domains", "_importance", "_projects", "_sessions", "_types")

    def __init__(self, query: ObservationQuery) -> None:
        self._domains = frozenset(query.domains)
        self._importance = frozenset(query.importance)
        self._projects = frozenset(query.project_ids)
        self._sessions = frozenset(query.session_ids)
        self._types = frozenset(query.event_types)
        self._classes = frozenset(query.classifications)

    def matches(
        self,
        *,
        event_type: str,
        importance: str,
        project_id: str | None,
        session_id: str | None,
        classification: str,
    ) -> bool:
        return (
            (not self._types or event_type in self._types)
            and (not self._importance or importance in self._importance)
            and (not self._domains or domain_of(event_type) in self._domains)
            and (not self._sessions or session_id in self._sessions)
            and (not self._projects or project_id in self._projects)
            and (not self._classes or classification in self._classes)
        )
