"""The MN0 wire shapes: assignment identity, lease request, grant, report and spool status.

Each shape parses alone through this module's own cattrs converter, which refuses unknown
keys (a reader built before a field must fail, not guess) and maps every failure to a
`validation_failed` MaiaError naming the field. Ordering between grants is not a schema
matter: the machines in `_node` and `_control` enforce it. Wire keys are camelCase; Python
attributes are snake_case.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Literal, TypeVar

import attrs
import cattrs
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override

from maia.core import TIMESTAMP_PATTERN, MaiaError, is_digest, is_wire_id, parse_timestamp

from ._bounds import MAX_TTL_MS, MIN_TTL_MS
from ._spool import EvidenceSpoolStatus

Phase = Literal["starting", "running", "stopping", "stopped"]
RequestKind = Literal["acquire", "renew"]
_SAFE = 2**53 - 1


def _wire_id(_: object, attribute: attrs.Attribute[str], value: str) -> None:
    if not isinstance(value, str) or not is_wire_id(value):
        raise ValueError(f"{attribute.name}: must be a wire identifier")


def _count(minimum: int) -> Any:
    def check(_: object, attribute: attrs.Attribute[int], value: int) -> None:
        if isinstance(value, bool) or not isinstance(value, int) or not minimum <= value <= _SAFE:
            raise ValueError(f"{attribute.name}: must be an integer >= {minimum}")

    return check


def _timestamp(_: object, attribute: attrs.Attribute[str], value: str) -> None:
    if not isinstance(value, str) or _TIMESTAMP.match(value) is None:
        parse_timestamp(value if isinstance(value, str) else "", _camel(attribute.name))


_TIMESTAMP = re.compile(TIMESTAMP_PATTERN)


def _timestamp_ms(text: str) -> int:
    """Milliseconds of an already validated timestamp (the C parser; strptime is slow)."""
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        return parse_timestamp(text)  # raises validation_failed with the standard message
    return int(moment.replace(microsecond=0).timestamp()) * 1000 + moment.microsecond // 1000


@attrs.frozen
class MachineAssignment:
    """The exact thing a Control Node places: who, which registration, what environment."""

    assignment_id: str = attrs.field(validator=_wire_id)
    control_node_id: str = attrs.field(validator=_wire_id)
    registration_incarnation: int = attrs.field(validator=_count(1))
    project_id: str = attrs.field(validator=_wire_id)
    environment_id: str = attrs.field(validator=_wire_id)
    environment_revision: int = attrs.field(validator=_count(1))
    environment_digest: str = attrs.field()

    @environment_digest.validator
    def _digest(self, _: attrs.Attribute[str], value: str) -> None:
        if not isinstance(value, str) or not is_digest(value):
            raise ValueError("environment_digest: must be sha256: and 64 lowercase hex")

    @property
    def definition_key(self) -> tuple[str, str, int]:
        """(controlNodeId, environmentId, environmentRevision): one immutable definition."""
        return (self.control_node_id, self.environment_id, self.environment_revision)


@attrs.frozen
class MachineLeaseRequest:
    """A Node's request for a grant (acquire or renew), under a never-reused requestId."""

    request_id: str = attrs.field(validator=_wire_id)
    node_id: str = attrs.field(validator=_wire_id)
    assignment_id: str = attrs.field(validator=_wire_id)
    lease_epoch: int = attrs.field(validator=_count(1))
    kind: RequestKind = attrs.field(validator=attrs.validators.in_(("acquire", "renew")))


@attrs.frozen
class MachineLeaseGrant:
    """Control's answer to one request. The timestamps carry only the duration."""

    assignment_id: str = attrs.field(validator=_wire_id)
    lease_epoch: int = attrs.field(validator=_count(1))
    request_id: str = attrs.field(validator=_wire_id)
    renewal_sequence: int = attrs.field(validator=_count(1))
    revocation_revision: int = attrs.field(validator=_count(0))
    acknowledged_through: int = attrs.field(validator=_count(0))
    issued_at: str = attrs.field(validator=_timestamp)
    expires_at: str = attrs.field(validator=_timestamp)
    duration_ms: int = attrs.field(init=False, eq=False, repr=False)

    @duration_ms.default
    def _duration(self) -> int:
        return _timestamp_ms(self.expires_at) - _timestamp_ms(self.issued_at)

    def __attrs_post_init__(self) -> None:
        if not MIN_TTL_MS <= self.duration_ms <= MAX_TTL_MS:
            raise ValueError(
                f"expiresAt: the duration {self.duration_ms} ms is outside "
                f"[{MIN_TTL_MS}, {MAX_TTL_MS}] ms"
            )

    @property
    def pair(self) -> tuple[int, int]:
        """(leaseEpoch, renewalSequence): the order a Node applies grants in."""
        return (self.lease_epoch, self.renewal_sequence)


@attrs.frozen
class MachineLeaseReport:
    """What a Node says about one assignment: its phase, the grant it applied, its spool."""

    assignment_id: str = attrs.field(validator=_wire_id)
    lease_epoch: int = attrs.field(validator=_count(1))
    phase: Phase = attrs.field(
        validator=attrs.validators.in_(("starting", "running", "stopping", "stopped"))
    )
    applied_request_id: str | None = attrs.field(validator=attrs.validators.optional(_wire_id))
    applied_renewal_sequence: int | None = attrs.field(
        validator=attrs.validators.optional(_count(1))
    )
    observed_revocation_revision: int = attrs.field(validator=_count(0))
    spool: EvidenceSpoolStatus

    def __attrs_post_init__(self) -> None:
        if (self.applied_request_id is None) != (self.applied_renewal_sequence is None):
            raise ValueError("appliedRequestId and appliedRenewalSequence come together")
        if self.phase == "running" and self.applied_request_id is None:
            raise ValueError("phase: a running report names the grant it applied")


@attrs.frozen
class NodeStatus:
    """One authenticated status message: the heartbeat plus a report per assignment."""

    node_id: str = attrs.field(validator=_wire_id)
    registration_incarnation: int = attrs.field(validator=_count(1))
    report_sequence: int = attrs.field(validator=_count(1))
    reports: tuple[MachineLeaseReport, ...] = attrs.field(converter=tuple[MachineLeaseReport, ...])


_CAMEL = re.compile(r"_([a-z])")
_WIRE_TYPES = (  # leaves first: a hook is built from the hooks of the types it contains
    EvidenceSpoolStatus,
    MachineAssignment,
    MachineLeaseRequest,
    MachineLeaseGrant,
    MachineLeaseReport,
    NodeStatus,
)


def _camel(name: str) -> str:
    return _CAMEL.sub(lambda match: match.group(1).upper(), name)


def _strict_int(value: object, _: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError("must be an integer")
    return value


def _strict_str(value: object, _: object) -> str:
    if not isinstance(value, str):
        raise TypeError("must be a string")
    return value


def _make_converter() -> cattrs.Converter:
    converter = cattrs.Converter(forbid_extra_keys=True)
    converter.register_structure_hook(int, _strict_int)
    converter.register_structure_hook(str, _strict_str)
    for cls in _WIRE_TYPES:
        names: dict[str, Any] = {
            a.name: override(rename=_camel(a.name)) for a in attrs.fields(cls) if a.init
        }
        omitted: dict[str, Any] = {
            a.name: override(omit=True) for a in attrs.fields(cls) if not a.init
        }
        structure: Any = make_dict_structure_fn
        unstructure: Any = make_dict_unstructure_fn
        converter.register_structure_hook(
            cls, structure(cls, converter, _cattrs_forbid_extra_keys=True, **names)
        )
        converter.register_unstructure_hook(cls, unstructure(cls, converter, **names, **omitted))
    return converter


WIRE: cattrs.Converter = _make_converter()
"""The converter for MN0 shapes; never the global cattrs converter."""

T = TypeVar("T")


def parse_wire(cls: type[T], value: Mapping[str, Any]) -> T:
    """Structure `value` as `cls`, refusing unknown fields and out-of-bound values.

    Raises `MaiaError("validation_failed")` whose message names the shape and the field.
    """
    if not isinstance(value, Mapping):
        raise MaiaError("validation_failed", f"{cls.__name__}: must be an object", {"path": "$"})
    try:
        return WIRE.structure(dict(value), cls)
    except MaiaError as error:
        raise MaiaError(
            "validation_failed", f"{cls.__name__}: {error.message}", error.details
        ) from None
    except Exception as error:  # cattrs wraps every field failure; we name the first one
        path, detail = _first_failure(error)
        raise MaiaError(
            "validation_failed", f"{cls.__name__}: {path}: {detail}", {"path": path}
        ) from None


def _first_failure(error: BaseException) -> tuple[str, str]:
    """(camelCase field path, message) of the first leaf failure under a cattrs error."""
    path: list[str] = []
    while True:
        if isinstance(error, cattrs.ForbiddenExtraKeysError):
            return ".".join(path) or "$", f"unknown fields {sorted(error.extra_fields)}"
        if isinstance(error, BaseExceptionGroup) and error.exceptions:
            error = error.exceptions[0]
            for note in getattr(error, "__notes__", ()):
                name = getattr(note, "name", None)
                if isinstance(name, str | int):
                    path.append(_camel(str(name)))
                    break
            continue
        text = str(error)
        if isinstance(error, KeyError):
            text = "is required"
        head, sep, rest = text.partition(": ")
        if sep and head.isidentifier():
            return _camel(head), rest
        return ".".join(path) or "$", text


def to_wire(value: object) -> dict[str, Any]:
    """The camelCase JSON object of an MN0 shape."""
    result: dict[str, Any] = WIRE.unstructure(value)
    return result
