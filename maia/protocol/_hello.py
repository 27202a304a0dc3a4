"""The answer to `node.hello`, shared by both sockets (`/api/v1` and its observations).

Pure: the caller gives the Node's identity. A client of another protocol version is refused
with `protocol_incompatible`; `registryMatch` is true only when the client names the very
registry digest the Node runs (a hello without `registryDigest` matches nothing).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from maia import __version__
from maia.core import MaiaError

from ._capabilities import CAPABILITY_NAMES
from ._registry import PROTOCOL_VERSION

if TYPE_CHECKING:
    from ._ops_node import NodeHelloInput, NodeHelloOutput


def answer_hello(
    params: NodeHelloInput, *, node_id: str, epoch: int, registry_digest: str
) -> NodeHelloOutput:
    """The hello's result. Raises `protocol_incompatible` for another protocol version."""
    from ._ops_node import NodeHelloOutput  # the node ops load with their group

    if params.protocol != PROTOCOL_VERSION:
        raise MaiaError(
            "protocol_incompatible",
            f"protocol {params.protocol} is not {PROTOCOL_VERSION}",
            {"client": params.protocol, "node": PROTOCOL_VERSION},
        )
    return NodeHelloOutput(
        node_id=node_id,
        epoch=epoch,
        protocol=PROTOCOL_VERSION,
        registry_digest=registry_digest,
        version=__version__,
        capabilities=CAPABILITY_NAMES,
        registry_match=params.registry_digest is not None
        and params.registry_digest == registry_digest,
    )
