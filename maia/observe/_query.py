"""What a subscriber asks for: the observation query, its check, digest and matcher.

`ObservationQuery` is the spec's ObservationQueryV1 as an attrs class whose fields carry their
wire constraints, so `maia.protocol.check` refuses bad input with `validation_failed` naming
the field (unknown keys refused). Empty lists mean "all" (the local user is authorized for
every value on a single Node). The filter digest binds a cursor to the query it was issued
for: another query with the same cursor is `invalid_cursor`.
"""

# ruff: noqa: RUF009  (field() returns attrs.field: a field definition, not a shared default)

from __future__ import annotations

from typing import Final, Literal

import attrs

from maia.core import WIRE_ID_MAX_LENGTH, WIRE_ID_PATTERN, digest_json, field, spec, to_json

Domain = Literal[
    "agent", "swarm", "node", "provider", "voice", "a2a", "security", "storage", "scheduler"
]
Importance = Literal["authoritative", "diagnostic"]
Classification = Literal["public", "operator", "project", "sensitive"]

DOMAINS: Final = Domain.__args__  # type: ignore[attr-defined]
SNAPSHOT_LIMIT_DEFAULT: Final = 64
SNAPSHOT_LIMIT_MAX: Final = 1000
_ID = spec(min_length=1, max_length=WIRE_ID_MAX_LENGTH, pattern=WIRE_ID_PATTERN)
_TYPE = spec(min_length=1, max_length=64, pattern=r"^[a-z][a-z0-9_.-]*$")

# Event types by their first word: which observation domain they belong to.
_DOMAIN_OF_PREFIX: Final = {
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
    return _DOMAIN_OF_PREFIX.get(event_type.partition(".")[0], "node")


@attrs.frozen
class ObservationQuery:
    """Which records a subscriber wants (ObservationQueryV1); empty lists mean all."""

    domains: tuple[Domain, ...] = field(doc="Domains (empty: all).", factory=tuple, max_items=9)
    importance: tuple[Importance, ...] = field(
        doc="authoritative (journal events) and/or diagnostic (live deltas); empty: both.",
        factory=tuple,
        max_items=2,
    )
    project_ids: tuple[str, ...] = field(
        doc="Only these Projects (empty: all).", factory=tuple, max_items=64, items=_ID
    )
    session_ids: tuple[str, ...] = field(
        doc="Only these Sessions (empty: all).", factory=tuple, max_items=256, items=_ID
    )
    event_types: tuple[str, ...] = field(
        doc="Only these event types (empty: all).", factory=tuple, max_items=64, items=_TYPE
    )
    classifications: tuple[Classification, ...] = field(
        doc="Only these classifications (empty: all).", factory=tuple, max_items=4
    )
    include_content: bool = field(
        doc="Include text content in payloads (else redacted).", default=False
    )
    limit: int = field(
        doc="Records in the snapshot.",
        default=SNAPSHOT_LIMIT_DEFAULT,
        minimum=0,
        maximum=SNAPSHOT_LIMIT_MAX,
    )

    def digest(self) -> str:
        """The resolved filter digest (sha256 of the canonical query, limit left out)."""
        body = to_json(self)
        body.pop("limit", None)
        return digest_json(body)


@attrs.frozen
class ObserveInput:
    """The subscribe request of the observation stream (`observe.events`)."""

    query: ObservationQuery = field(doc="What to observe.", factory=ObservationQuery)
    cursor: str | None = field(
        doc="Resume after this cursor (from a previous frame).",
        default=None,
        min_length=1,
        max_length=1024,
    )


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
