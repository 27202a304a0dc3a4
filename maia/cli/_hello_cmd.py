"""`maia node hello`: the handshake as a person types it. Every field defaults to this CLI's
own (its protocol, the registry digest it was built on, `maia-cli` and its version), so a
bare `maia node hello` reads `registryMatch yes` against a Node of the same build; each
flag overrides one to ask what a Node answers another client.

A connection says hello once (a second `node.hello` on it is refused `invalid_request`), so
the command's params are the hello of a connection of its own (`hello_options`), with no
registry match required: its answer is the result.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

import click

from ._shortcuts import Shortcut

CLIENT_NAME: Final = "maia-cli"
HELLO: Final = "node.hello"
_FIELDS: Final = ("protocol", "registryDigest", "clientName", "clientVersion")


def _params() -> list[click.Parameter]:
    return [
        click.Argument(["protocol"], required=False, metavar="[PROTOCOL]"),
        click.Option(["--registry-digest"], metavar="sha256:HEX",
                     help="Registry digest to present (default: this CLI's own; "
                     "--registry-digest none sends none)."),
        click.Option(["--client-name"], help=f"Client program name (default: {CLIENT_NAME})."),
        click.Option(["--client-version"], help="Client version (default: this CLI's)."),
    ]  # fmt: skip


def _build(values: Mapping[str, Any]) -> dict[str, Any]:
    from maia import __version__
    from maia.protocol import PROTOCOL_VERSION, REGISTRY_DIGEST

    def given(name: str, default: str) -> str:  # an empty value is sent as typed, not replaced
        value = values.get(name)
        return default if value is None else str(value)

    digest = given("registry_digest", REGISTRY_DIGEST)
    wire: dict[str, Any] = {
        "protocol": given("protocol", PROTOCOL_VERSION),
        "clientName": given("client_name", CLIENT_NAME),
        "clientVersion": given("client_version", __version__),
    }
    if digest != "none":
        wire["registryDigest"] = digest
    return wire


NODE_SHORTCUTS: Final = (
    Shortcut(("node", "hello"), "node.hello",
             "Say hello as this CLI: check the protocol and registry, learn who the Node is "
             "(PROTOCOL defaults to this CLI's).", _params, _build),
)  # fmt: skip


def hello_options(params: Mapping[str, Any]) -> dict[str, Any]:
    """The SDK's `hello=` options that send exactly `params` (a field left out: None)."""
    return {key: params.get(key) for key in _FIELDS}


async def hello_anew(client: Any, params: dict[str, Any]) -> Any:
    """`node.hello` with `params` on a new connection to `client`'s Node (the console's
    own connection has said its hello); a stand-in client without an endpoint is asked."""
    endpoint = getattr(client, "endpoint", None)
    if endpoint is None:
        return await client.request(HELLO, params)
    from maia.client import open_client

    async with open_client(endpoint.url, token=endpoint.token, hello=hello_options(params),
                           require_registry_match=False) as fresh:  # fmt: skip
        return fresh.hello
