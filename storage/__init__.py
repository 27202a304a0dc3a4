"""The storage actor and everything it keeps: migrations, tables, the event journal,
receipts, idempotency keys and preview proofs. All persistence of the Node goes through it."""

from ._actor import SYNCHRONOUS_MODES as SYNCHRONOUS_MODES
from ._actor import Storage as Storage
from ._actor import StorageStatistics as StorageStatistics
from ._actor import WriteFn as WriteFn
from ._actor import open_storage as open_storage
from ._node import NodeIdentity as NodeIdentity
from ._node import next_worker_epoch as next_worker_epoch
from ._schema import MIGRATIONS as MIGRATIONS
from ._schema import SCHEMA_VERSION as SCHEMA_VERSION
