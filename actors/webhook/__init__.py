"""Webhooks: signed, retried, SSRF-safe deliveries of journal events, one actor per webhook.

`_ssrf` judges destinations, `_http` sends one attempt to a checked address, `_signing` makes
the Standard Webhooks headers, `_schedule` says when to retry; `_table` holds the webhook and
delivery lifecycles, `_core` the pure delivery step, `_sql` the webhook rows, `_deliveries`
the outbox and attempt rows, `_changes` the webhook's transitions as writes, `_actor` the
`WebhookActor`, `_outbox` the journal processor that queues deliveries, `_views` the wire
shapes and `_kind` the kind the runtime opens (`WEBHOOKS`).
See docs/webhooks.md.
"""

from ._actor import AttemptDone as AttemptDone
from ._actor import ConfirmChange as ConfirmChange
from ._actor import Kick as Kick
from ._actor import Restarted as Restarted
from ._actor import WebhookActor as WebhookActor
from ._actor import WebhookContext as WebhookContext
from ._actor import WebhookMessage as WebhookMessage
from ._changes import PING_EVENT_TYPE as PING_EVENT_TYPE
from ._changes import TARGET_TYPE as TARGET_TYPE
from ._changes import Proof as Proof
from ._changes import WebhookSpec as WebhookSpec
from ._changes import add_write as add_write
from ._changes import gone_write as gone_write
from ._changes import not_found as not_found
from ._changes import ping_write as ping_write
from ._changes import redeliver_write as redeliver_write
from ._changes import remove_write as remove_write
from ._changes import webhook_id_for as webhook_id_for
from ._core import DeliveryStatus as DeliveryStatus
from ._core import DisableWebhook as DisableWebhook
from ._core import after_attempt as after_attempt
from ._core import attempt_event as attempt_event
from ._core import cancel as cancel
from ._core import redeliver as redeliver
from ._deliveries import MAX_PENDING_PER_WEBHOOK as MAX_PENDING_PER_WEBHOOK
from ._deliveries import RECENT_DELIVERIES as RECENT_DELIVERIES
from ._deliveries import AttemptRecord as AttemptRecord
from ._deliveries import DeliveryRecord as DeliveryRecord
from ._deliveries import attempts_of as attempts_of
from ._deliveries import count_pending as count_pending
from ._deliveries import delivery_body_of as delivery_body_of
from ._deliveries import delivery_ids as delivery_ids
from ._deliveries import finish_attempt as finish_attempt
from ._deliveries import get_delivery as get_delivery
from ._deliveries import insert_delivery as insert_delivery
from ._deliveries import interrupted_attempts as interrupted_attempts
from ._deliveries import next_pending as next_pending
from ._deliveries import pending_of as pending_of
from ._deliveries import recent_deliveries as recent_deliveries
from ._deliveries import require_backlog_room as require_backlog_room
from ._deliveries import save_status as save_status
from ._deliveries import start_attempt as start_attempt
from ._deliveries import webhooks_with_pending as webhooks_with_pending
from ._http import MAX_RETRY_AFTER_MS as MAX_RETRY_AFTER_MS
from ._http import REQUEST_TIMEOUT_S as REQUEST_TIMEOUT_S
from ._http import Connector as Connector
from ._http import HttpxClient as HttpxClient
from ._http import SendKind as SendKind
from ._http import SendResult as SendResult
from ._http import TcpConnector as TcpConnector
from ._http import WebhookClient as WebhookClient
from ._http import classify as classify
from ._http import parse_retry_after as parse_retry_after
from ._kind import WEBHOOKS as WEBHOOKS
from ._kind import WebhookKind as WebhookKind
from ._kind import WebhookService as WebhookService
from ._kind import serve_outbox as serve_outbox
from ._outbox import MAX_BATCH_RECORDS as MAX_BATCH_RECORDS
from ._outbox import PROCESSOR_ID as PROCESSOR_ID
from ._outbox import Checkpoint as Checkpoint
from ._outbox import ProcessedBatch as ProcessedBatch
from ._outbox import event_body as event_body
from ._outbox import outbox_watermark as outbox_watermark
from ._outbox import process_batch as process_batch
from ._outbox import read_checkpoint as read_checkpoint
from ._schedule import MAX_ATTEMPTS as MAX_ATTEMPTS
from ._schedule import RETRY_SCHEDULE_MS as RETRY_SCHEDULE_MS
from ._schedule import next_attempt_at as next_attempt_at
from ._schedule import schedule_text as schedule_text
from ._signing import SECRET_PREFIX as SECRET_PREFIX
from ._signing import SecretUnavailable as SecretUnavailable
from ._signing import delivery_body as delivery_body
from ._signing import read_secret as read_secret
from ._signing import signature as signature
from ._signing import signed_headers as signed_headers
from ._sql import MAX_WEBHOOKS as MAX_WEBHOOKS
from ._sql import WEBHOOK_ROWS as WEBHOOK_ROWS
from ._sql import WebhookRecord as WebhookRecord
from ._sql import WebhookRows as WebhookRows
from ._sql import count_live_webhooks as count_live_webhooks
from ._sql import get_webhook as get_webhook
from ._sql import has_active_webhooks as has_active_webhooks
from ._sql import latest_event as latest_event
from ._sql import list_webhooks as list_webhooks
from ._sql import page_webhooks as page_webhooks
from ._sql import preview_revision as preview_revision
from ._ssrf import Destination as Destination
from ._ssrf import DestinationRefused as DestinationRefused
from ._ssrf import IPAddress as IPAddress
from ._ssrf import IPNetwork as IPNetwork
from ._ssrf import Resolver as Resolver
from ._ssrf import Target as Target
from ._ssrf import admit as admit
from ._ssrf import blocked_class as blocked_class
from ._ssrf import check_url as check_url
from ._ssrf import parse_allow_addresses as parse_allow_addresses
from ._ssrf import resolve_destination as resolve_destination
from ._ssrf import system_resolver as system_resolver
from ._table import DELIVERY_TABLE as DELIVERY_TABLE
from ._table import WEBHOOK_TABLE as WEBHOOK_TABLE
from ._table import DeliveryEvent as DeliveryEvent
from ._table import DeliveryState as DeliveryState
from ._table import WebhookEvent as WebhookEvent
from ._table import WebhookState as WebhookState
from ._views import delivery_wire as delivery_wire
from ._views import webhook_wire as webhook_wire

KIND = WEBHOOKS  # what `python -m actors._diagrams` collects
