"""The Maia Node: the long-running local service, its root tree and its WebSocket API.

`serve_node(NodeConfig(...))` runs one inside a trio program; `run_node` adds the signal
handling of the `maia node start` process; `node_group` is the click group of
`maia node start|status|stop`. Handlers are registered by operation ID on `HANDLERS`.
Its first step keeps attrs' generated source out of `linecache` (`_linecache`: ~2 MiB of
an idle Node).
"""

# ruff: noqa: E402  (the first step must run before the imports below define any class)
from ._linecache import keep_attrs_source_out

keep_attrs_source_out()

from ._backup import backup_database as backup_database
from ._dispatch import DEFAULT_DEADLINE_S as DEFAULT_DEADLINE_S
from ._dispatch import HANDLERS as HANDLERS
from ._dispatch import LOCAL_USER_ROLE as LOCAL_USER_ROLE
from ._dispatch import Call as Call
from ._dispatch import Dispatcher as Dispatcher
from ._dispatch import HandlerTable as HandlerTable
from ._dispatch import Pending as Pending
from ._files import open_private as open_private
from ._gate import API_PATH as API_PATH
from ._home import NodeHome as NodeHome
from ._home import write_private_file as write_private_file
from ._lock import NodeLock as NodeLock
from ._server import MAX_CONNECTIONS as MAX_CONNECTIONS
from ._server import MAX_IN_FLIGHT as MAX_IN_FLIGHT
from ._server import ApiServer as ApiServer
from ._service import NodeRunning as NodeRunning
from ._service import NodeStartError as NodeStartError
from ._service import run_node as run_node
from ._service import serve_node as serve_node
from ._services import Mailbox as Mailbox
from ._services import NodeConfig as NodeConfig
from ._services import NodeServices as NodeServices
from ._wire import MAX_FRAME_BYTES as MAX_FRAME_BYTES
