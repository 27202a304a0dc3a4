"""The Python SDK of the Maia Node (anyio + wsproto: runs under trio and under asyncio).

    async with open_client() as client:
        status = await client.node.status()
        answer = await send_and_wait(client, session_id, "Hi!", timeout_s=60)

Methods are a projection of the operation registry; failures are `MaiaError` with a code
from the closed set.
"""

from maia.core import NODE_ENV as NODE_ENV
from maia.core import Discovery as Discovery
from maia.core import MaiaError as MaiaError
from maia.core import default_home as default_home
from maia.core import find_live_node as find_live_node
from maia.core import process_start_time as process_start_time
from maia.core import read_discovery as read_discovery
from maia.core import read_token as read_token

from ._client import DEFAULT_TIMEOUT_S as DEFAULT_TIMEOUT_S
from ._client import MaiaClient as MaiaClient
from ._client import open_client as open_client
from ._locate import Endpoint as Endpoint
from ._locate import locate_node as locate_node
from ._observations import ObservationFeed as ObservationFeed
from ._observations import SessionFeed as SessionFeed
from ._observations import StreamFrame as StreamFrame
from ._observations import attach_session as attach_session
from ._observations import observe_events as observe_events
from ._projection import OPERATION_TREE as OPERATION_TREE
from ._transport import MAX_MESSAGE_BYTES as MAX_MESSAGE_BYTES
from ._turns import send_and_wait as send_and_wait
from ._turns import send_and_wait_wire as send_and_wait_wire
