"""CLI rough edges a new user met, against a real Node process: a bare `maia node hello`
presents this CLI's own protocol and registry digest (registryMatch yes), `maia node
backup` into a missing folder names the folder, and `maia config show` lists
`webhooks.allowAddresses` with its source once admitted."""

from __future__ import annotations

import json
from pathlib import Path

from maia.protocol import REGISTRY_DIGEST

from ._node import running_node


def test_hello_backup_and_config_show(tmp_path: Path) -> None:
    """hello: registryMatch yes (no when told to send none); backup: the folder named, exit
    2, nothing made; config show: allowAddresses default [], then the admitted list (user)."""
    with running_node(tmp_path) as cli:
        hello = cli("node", "hello")
        assert hello.returncode == 0, hello.stderr
        assert "registryMatch   yes" in hello.stdout
        as_json = json.loads(cli("node", "hello", "--json").stdout)["result"]
        assert (as_json["registryMatch"], as_json["registryDigest"]) == (True, REGISTRY_DIGEST)
        bare = json.loads(cli("node", "hello", "--registry-digest", "none", "--json").stdout)
        assert bare["result"]["registryMatch"] is False
        missing = tmp_path / "no-such-folder"
        backup = cli("node", "backup", str(missing / "copy.db"))
        assert backup.returncode == 2
        assert f"the folder {missing} does not exist" in backup.stderr
        assert "malformed" not in backup.stderr
        assert not missing.exists()
        shown = cli("config", "show")
        assert shown.returncode == 0, shown.stderr
        assert "webhooks.allowAddresses" in shown.stdout
        (cli.home / "config.jsonc").write_text(
            '{"webhooks": {"allowAddresses": ["127.0.0.1/32"]}}', encoding="utf-8"
        )
        assert cli("config", "admit", "--yes").returncode == 0
        effective = json.loads(cli("config", "show", "--json").stdout)["result"]["effective"]
        assert effective["webhooks.allowAddresses"] == {"value": ["127.0.0.1/32"],
                                                        "source": "user"}  # fmt: skip
