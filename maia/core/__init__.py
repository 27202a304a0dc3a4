"""What everything below the faces shares, and nothing else.

The closed error set, IDs, clocks, time formats, digests, limits, definition references, the
schema machinery (field metadata, shapes, the runtime check, the JSON encoder) that the
operation registry and the lease schemas both use, and the Node's discovery-file format (the
Node writes it, the SDK reads it, and neither imports the other). It imports nothing else of
Maia but the worker protocol's strict JSON decoder, so `import storage` or `import
supervision` stays cheap: the operation registry lives in `maia.protocol`, built only there.

Every name loads on first use (module `__getattr__`): a program that needs only the
error type or the discovery file (the CLI's one-call path) imports neither attrs nor the
schema machinery.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from worker_bridge import STRICT_DECODER as STRICT_DECODER

    from ._check import CrossFieldError as CrossFieldError
    from ._check import check as check
    from ._clock import Clock as Clock
    from ._clock import FakeClock as FakeClock
    from ._clock import SystemClock as SystemClock
    from ._digests import DIGEST_PATTERN as DIGEST_PATTERN
    from ._digests import canonical_json as canonical_json
    from ._digests import digest_bytes as digest_bytes
    from ._digests import digest_json as digest_json
    from ._digests import is_digest as is_digest
    from ._discovery import DISCOVERY_FORMAT as DISCOVERY_FORMAT
    from ._discovery import NODE_ENV as NODE_ENV
    from ._discovery import Discovery as Discovery
    from ._discovery import default_home as default_home
    from ._discovery import find_live_node as find_live_node
    from ._discovery import process_start_time as process_start_time
    from ._discovery import read_discovery as read_discovery
    from ._discovery import read_token as read_token
    from ._encode import to_json as to_json
    from ._errors import ERROR_CODES as ERROR_CODES
    from ._errors import Code as Code
    from ._errors import ErrorCode as ErrorCode
    from ._errors import MaiaError as MaiaError
    from ._field_kinds import ID_PHRASE as ID_PHRASE
    from ._field_kinds import digest_field as digest_field
    from ._field_kinds import id_field as id_field
    from ._field_kinds import timestamp_field as timestamp_field
    from ._fields import FieldSpec as FieldSpec
    from ._fields import field as field
    from ._fields import spec as spec
    from ._ids import GENERATED_ID_PATTERN as GENERATED_ID_PATTERN
    from ._ids import ID_GRAMMAR_PATTERN as ID_GRAMMAR_PATTERN
    from ._ids import ID_PREFIXES as ID_PREFIXES
    from ._ids import WIRE_ID_MAX_LENGTH as WIRE_ID_MAX_LENGTH
    from ._ids import WIRE_ID_PATTERN as WIRE_ID_PATTERN
    from ._ids import check_wire_id as check_wire_id
    from ._ids import id_prefix as id_prefix
    from ._ids import is_wire_id as is_wire_id
    from ._ids import new_id as new_id
    from ._ids import random_hex as random_hex
    from ._limits import INPUT_PREVIEW_MAX_BYTES as INPUT_PREVIEW_MAX_BYTES
    from ._limits import MAX_SESSION_PENDING_TURNS as MAX_SESSION_PENDING_TURNS
    from ._limits import WAIT_MILLISECONDS_MAX as WAIT_MILLISECONDS_MAX
    from ._refs import DEFINITION_REF_PATTERN as DEFINITION_REF_PATTERN
    from ._refs import DefinitionRef as DefinitionRef
    from ._refs import format_definition_ref as format_definition_ref
    from ._refs import parse_definition_ref as parse_definition_ref
    from ._time import MAX_SAFE_INTEGER as MAX_SAFE_INTEGER
    from ._time import TIMESTAMP_PATTERN as TIMESTAMP_PATTERN
    from ._time import check_revision as check_revision
    from ._time import format_timestamp_ms as format_timestamp_ms
    from ._time import parse_timestamp as parse_timestamp
    from ._zones import is_iana_time_zone as is_iana_time_zone

_LAZY: dict[str, str] = {
    "STRICT_DECODER": "worker_bridge",
    "CrossFieldError": "._check",
    "check": "._check",
    "Clock": "._clock",
    "FakeClock": "._clock",
    "SystemClock": "._clock",
    "DIGEST_PATTERN": "._digests",
    "canonical_json": "._digests",
    "digest_bytes": "._digests",
    "digest_json": "._digests",
    "is_digest": "._digests",
    "DISCOVERY_FORMAT": "._discovery",
    "NODE_ENV": "._discovery",
    "Discovery": "._discovery",
    "default_home": "._discovery",
    "find_live_node": "._discovery",
    "process_start_time": "._discovery",
    "read_discovery": "._discovery",
    "read_token": "._discovery",
    "to_json": "._encode",
    "ERROR_CODES": "._errors",
    "Code": "._errors",
    "ErrorCode": "._errors",
    "MaiaError": "._errors",
    "ID_PHRASE": "._field_kinds",
    "digest_field": "._field_kinds",
    "id_field": "._field_kinds",
    "timestamp_field": "._field_kinds",
    "FieldSpec": "._fields",
    "field": "._fields",
    "spec": "._fields",
    "GENERATED_ID_PATTERN": "._ids",
    "ID_GRAMMAR_PATTERN": "._ids",
    "ID_PREFIXES": "._ids",
    "WIRE_ID_MAX_LENGTH": "._ids",
    "WIRE_ID_PATTERN": "._ids",
    "check_wire_id": "._ids",
    "id_prefix": "._ids",
    "is_wire_id": "._ids",
    "new_id": "._ids",
    "random_hex": "._ids",
    "INPUT_PREVIEW_MAX_BYTES": "._limits",
    "MAX_SESSION_PENDING_TURNS": "._limits",
    "WAIT_MILLISECONDS_MAX": "._limits",
    "DEFINITION_REF_PATTERN": "._refs",
    "DefinitionRef": "._refs",
    "format_definition_ref": "._refs",
    "parse_definition_ref": "._refs",
    "MAX_SAFE_INTEGER": "._time",
    "TIMESTAMP_PATTERN": "._time",
    "check_revision": "._time",
    "format_timestamp_ms": "._time",
    "parse_timestamp": "._time",
    "is_iana_time_zone": "._zones",
}
__all__ = sorted(_LAZY)


def __getattr__(name: str) -> Any:  # PEP 562; not `maia._lazy`: maia.core imports no layer above
    module = _LAZY.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(module, __name__), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(__all__)
