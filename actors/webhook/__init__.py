"""Webhooks: signed, retried, SSRF-safe deliveries of journal events, one actor per webhook.

`_ssrf` judges destinations, `_http` sends one attempt to a checked address, `_signing` makes
the Standard Webhooks headers, `_schedule` says when to retry. See docs/webhooks.md.
"""

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
