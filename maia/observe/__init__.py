"""Events you can follow: the observation hub and the streams of `/api/v1/observations`.

The hub (`open_hub`) is fed by storage after each commit, by the Session actor's live
item records and by the workers' diagnostics (`DiagnosticsRecorder`, which also journals
their drops as gap events); it fans them out to bounded per-subscriber buffers. The socket
(`accept_observations`, `serve_observation_connection`) serves two streams: `observe.events`
(ObservationRecordV1 batches with signed cursors, snapshots, gaps and resets) and
`session.attach` (one Session's turns and items, synchronized with open items' text).
See docs/observations.md.
"""

from ._attach import AttachStream as AttachStream
from ._buffer import DEFAULT_CAPACITY as DEFAULT_CAPACITY
from ._buffer import Subscriber as Subscriber
from ._diagnostics import DiagnosticsRecorder as DiagnosticsRecorder
from ._diagnostics import open_hub as open_hub
from ._diagnostics import run_recorder as run_recorder
from ._event_types import LIVE_TYPES as LIVE_TYPES
from ._event_types import check_observed_types as check_observed_types
from ._frames import MAX_FRAME_BYTES as MAX_FRAME_BYTES
from ._frames import MAX_FRAME_RECORDS as MAX_FRAME_RECORDS
from ._hub import Dispatch as Dispatch
from ._hub import HubStatistics as HubStatistics
from ._hub import LiveSink as LiveSink
from ._hub import ObservationHub as ObservationHub
from ._observe import OBSERVATIONS_SCOPE as OBSERVATIONS_SCOPE
from ._observe import ObservationStream as ObservationStream
from ._query import ObservationQuery as ObservationQuery
from ._query import ObserveInput as ObserveInput
from ._query import domain_of as domain_of
from ._shape import OBSERVATION_SCHEMA as OBSERVATION_SCHEMA
from ._socket import HEARTBEAT_S as HEARTBEAT_S
from ._socket import OBSERVATIONS_PATH as OBSERVATIONS_PATH
from ._socket import SEND_TIMEOUT_S as SEND_TIMEOUT_S
from ._socket import SUBPROTOCOL as SUBPROTOCOL
from ._socket import accept_observations as accept_observations
from ._socket import parse_subscribe as parse_subscribe
from ._socket import serve_observation_connection as serve_observation_connection
from ._untrusted import lone_surrogate_path as lone_surrogate_path
from ._untrusted import refuse_lone_surrogates as refuse_lone_surrogates
from ._untrusted import repeated_key as repeated_key
