"""The worker protocol's numbers, in one place (spec: Worker protocol, Limits and Timing).

Byte limits count UTF-8 bytes of the encoded value. Timings are defaults: the supervisor's
`WorkerTimings` may shorten them (tests do), never the worker on its own.
"""

from __future__ import annotations

PROTOCOL_VERSION = 2  # version 1 was the managed Pi worker's; this is the spec's target
MAX_FRAME_BYTES = 1024 * 1024  # one NDJSON line, newline excluded
MAX_CONTENT_BYTES = 16 * 1024  # instruction or message content
MAX_TOOL_RESULT_BYTES = 64 * 1024  # inline tool result
MAX_UNACKED_EVENTS = 256  # authoritative event frames in flight before a cumulative ack
MAX_BATCH_RECORDS = 128  # records in one observation-batch
MAX_BATCH_BYTES = 512 * 1024  # encoded records in one observation-batch
MAX_DIAGNOSTIC_RECORDS = 2048  # the worker's diagnostic queue
MAX_DIAGNOSTIC_BYTES = 8 * 1024 * 1024
MAX_JSON_DEPTH = 32  # nesting of any JSON value inside a frame
MAX_ID_CHARS = 128  # requestId, turnId, callId, attemptId
MAX_NAME_CHARS = 256  # short strings: names, kinds, codes, reasons
MAX_LIST_ITEMS = 64  # capabilities and similar short lists

INIT_TIMEOUT_MS = 15_000
HEARTBEAT_INTERVAL_MS = 5_000
MISSED_HEARTBEATS = 3
INTERRUPT_GRACE_MS = 10_000
TERMINATE_GRACE_MS = 5_000

# Environment a supervisor gives a worker (the worker learns its epoch before any frame).
ENV_EPOCH = "MAIA_WORKER_EPOCH"
ENV_ATTEMPT = "MAIA_WORKER_ATTEMPT"
ENV_HEARTBEAT_MS = "MAIA_WORKER_HEARTBEAT_MS"
