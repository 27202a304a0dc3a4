"""The storage actor and everything it keeps: migrations, tables, the event journal,
receipts, idempotency keys and preview proofs. All persistence of the Node goes through it.

Trio code talks to `Storage` (from `open_storage`); the synchronous helpers below run inside
a `Storage.write` fn, so a transition writes its state, event and receipt in one transaction.
See docs/storage.md.
"""

from ._actor import CACHE_MIB_VARIABLE as CACHE_MIB_VARIABLE
from ._actor import DEFAULT_CACHE_MIB as DEFAULT_CACHE_MIB
from ._actor import SYNCHRONOUS_MODES as SYNCHRONOUS_MODES
from ._actor import Storage as Storage
from ._actor import StorageStatistics as StorageStatistics
from ._actor import WriteFn as WriteFn
from ._actor import cache_mib_setting as cache_mib_setting
from ._actor import open_storage as open_storage
from ._cas import REVISIONED_TABLES as REVISIONED_TABLES
from ._cas import compare_and_set as compare_and_set
from ._cas import read_revision as read_revision
from ._config import USER_SCOPE as USER_SCOPE
from ._config import ConfigSnapshot as ConfigSnapshot
from ._config import admit_snapshot as admit_snapshot
from ._config import admitted_snapshot as admitted_snapshot
from ._config import scope_revision as scope_revision
from ._cursors import DEFAULT_CURSOR_TTL_MS as DEFAULT_CURSOR_TTL_MS
from ._cursors import JOURNAL_SCOPE as JOURNAL_SCOPE
from ._cursors import CursorSigner as CursorSigner
from ._cursors import load_or_create_node_key as load_or_create_node_key
from ._events import EVENT_COLUMNS as EVENT_COLUMNS
from ._events import EVENT_SCHEMA_VERSION as EVENT_SCHEMA_VERSION
from ._events import MAX_PAGE as MAX_PAGE
from ._events import Envelope as Envelope
from ._events import EventPage as EventPage
from ._events import EventRecord as EventRecord
from ._events import append_event as append_event
from ._events import current_envelope as current_envelope
from ._events import event_context as event_context
from ._events import event_correlation as event_correlation
from ._events import oldest_retained_position as oldest_retained_position
from ._events import prune_events as prune_events
from ._events import read_events as read_events
from ._events import read_owner_events as read_owner_events
from ._ids import new_ordered_id as new_ordered_id
from ._mutations import Applied as Applied
from ._mutations import Confirmation as Confirmation
from ._mutations import MutationKey as MutationKey
from ._mutations import MutationResult as MutationResult
from ._mutations import run_mutation as run_mutation
from ._node import NodeIdentity as NodeIdentity
from ._node import next_worker_epoch as next_worker_epoch
from ._previews import DEFAULT_PREVIEW_TTL_MS as DEFAULT_PREVIEW_TTL_MS
from ._previews import ExpectedTarget as ExpectedTarget
from ._previews import IssuedPreview as IssuedPreview
from ._previews import consume_preview as consume_preview
from ._previews import issue_preview as issue_preview
from ._previews import prune_previews as prune_previews
from ._readers import READER_CACHE_KIB as READER_CACHE_KIB
from ._receipts import MIN_RECEIPT_RETENTION_MS as MIN_RECEIPT_RETENTION_MS
from ._receipts import RECEIPT_SCHEMA_VERSION as RECEIPT_SCHEMA_VERSION
from ._receipts import Receipt as Receipt
from ._receipts import ReceiptTarget as ReceiptTarget
from ._receipts import command_correlation as command_correlation
from ._receipts import find_receipt as find_receipt
from ._receipts import get_receipt as get_receipt
from ._receipts import list_receipts as list_receipts
from ._receipts import prune_receipts as prune_receipts
from ._rows import ProjectRow as ProjectRow
from ._rows import SessionRow as SessionRow
from ._rows import TurnItemRow as TurnItemRow
from ._rows import TurnRow as TurnRow
from ._rows import WorkerAttemptRow as WorkerAttemptRow
from ._rows import get_project as get_project
from ._rows import get_session as get_session
from ._rows import get_turn as get_turn
from ._rows import get_worker_attempt as get_worker_attempt
from ._rows import insert_project as insert_project
from ._rows import insert_session as insert_session
from ._rows import insert_turn as insert_turn
from ._rows import insert_turn_item as insert_turn_item
from ._rows import insert_worker_attempt as insert_worker_attempt
from ._rows import list_turn_items as list_turn_items
from ._rows import list_turns as list_turns
from ._rows import next_turn_seq as next_turn_seq
from ._schema import MIGRATIONS as MIGRATIONS
from ._schema import SCHEMA_VERSION as SCHEMA_VERSION
from ._writer import CommitListener as CommitListener
