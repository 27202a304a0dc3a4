"""The protocol: operation registry, schemas, errors, IDs, digests, timestamps and clocks.

Pure: no I/O. Everything the Node, the SDK and the CLI agree on is defined here once.
"""

from ._clock import Clock as Clock
from ._clock import FakeClock as FakeClock
from ._clock import SystemClock as SystemClock
from ._digests import DIGEST_PATTERN as DIGEST_PATTERN
from ._digests import canonical_json as canonical_json
from ._digests import digest_bytes as digest_bytes
from ._digests import digest_json as digest_json
from ._digests import is_digest as is_digest
from ._errors import ERROR_CODES as ERROR_CODES
from ._errors import ErrorCode as ErrorCode
from ._errors import MaiaError as MaiaError
from ._ids import GENERATED_ID_PATTERN as GENERATED_ID_PATTERN
from ._ids import ID_PREFIXES as ID_PREFIXES
from ._ids import WIRE_ID_MAX_LENGTH as WIRE_ID_MAX_LENGTH
from ._ids import WIRE_ID_PATTERN as WIRE_ID_PATTERN
from ._ids import check_wire_id as check_wire_id
from ._ids import id_prefix as id_prefix
from ._ids import is_wire_id as is_wire_id
from ._ids import new_id as new_id
from ._time import MAX_SAFE_INTEGER as MAX_SAFE_INTEGER
from ._time import TIMESTAMP_PATTERN as TIMESTAMP_PATTERN
from ._time import check_revision as check_revision
from ._time import format_timestamp_ms as format_timestamp_ms
from ._time import parse_timestamp as parse_timestamp
