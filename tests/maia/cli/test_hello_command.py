"""`node hello` typed in the console (`execute` on the console's greeted connection) and in
the CLI: its params are said as the hello of a connection of their own, never as a second
`node.hello` on a greeted one (which the Node refuses `invalid_request`); the console's
connection goes on serving (a real Node process)."""

from __future__ import annotations

import io
import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from maia.cli import execute, parse_invocation
from maia.client import Discovery, open_client
from maia.protocol import REGISTRY_DIGEST

from ..._node_process import serving_node
from ._node import running_node

NodeProcess = tuple[Path, Discovery]


@pytest.fixture(scope="module")
def node_process(tmp_path_factory: pytest.TempPathFactory) -> Iterator[NodeProcess]:
    home = tmp_path_factory.mktemp("hello") / "home"
    argv = [sys.executable, "-m", "maia.node", "start", "--home", str(home)]
    with serving_node(argv, home) as (_, record):
        yield home, record


async def _run(client: object, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = await execute(parse_invocation(list(argv)), client,  # type: ignore[arg-type]
                         stdout=out, stderr=err, interactive=False)  # fmt: skip
    return code, out.getvalue(), err.getvalue()


async def test_node_hello_on_a_greeted_connection_says_a_hello_of_its_own(
    node_process: NodeProcess,
) -> None:
    """The console's way: registryMatch yes with this CLI's defaults, no with none sent, a
    protocol mismatch its typed error; the greeted connection still answers node.status."""
    home, record = node_process
    async with open_client(home=home) as client:
        code, out, err = await _run(client, "node", "hello", "--json")
        assert code == 0, err
        result = json.loads(out)["result"]
        assert (result["registryMatch"], result["registryDigest"]) == (True, REGISTRY_DIGEST)
        assert result["nodeId"] == record.node_id
        code, out, err = await _run(client, "node", "hello", "--registry-digest", "none", "--json")
        assert (code, json.loads(out)["result"]["registryMatch"]) == (0, False), err
        code, out, err = await _run(client, "node", "hello", "maia.protocol/v0")
        assert code != 0
        assert "protocol_incompatible" in err, (out, err)
        assert (await client.node.status()).node_id == record.node_id


def test_the_cli_node_hello_refuses_another_protocol(tmp_path: Path) -> None:
    """`maia node hello maia.protocol/v0`: protocol_incompatible from the connection's own
    hello (not invalid_request from a second one)."""
    with running_node(tmp_path) as cli:
        old = cli("node", "hello", "maia.protocol/v0")
        assert old.returncode != 0
        assert "protocol_incompatible" in old.stderr, old.stderr
        assert "invalid_request" not in old.stderr


@pytest.mark.parametrize(
    ("args", "path"),
    [([""], "protocol"), (["--client-name", ""], "clientName"),
     (["--registry-digest", ""], "registryDigest")],
)  # fmt: skip
async def test_an_empty_value_is_sent_not_replaced_by_the_default(
    node_process: NodeProcess, args: list[str], path: str
) -> None:
    """`maia node hello ""` asks the Node about an empty protocol (validation_failed naming
    it, exit 2); it used to send this CLI's own and answer `registryMatch yes`."""
    home, _ = node_process
    async with open_client(home=home) as client:
        code, out, err = await _run(client, "node", "hello", *args, "--json")
    assert code == 2, (out, err)
    error = json.loads(out)["error"]
    assert (error["code"], error["details"]["path"]) == ("validation_failed", path)
