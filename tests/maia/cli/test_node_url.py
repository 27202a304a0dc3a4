"""A malformed `--node` URL or `--control` URL is a typed refusal from the real CLI, with no
traceback (a bad IPv6 literal or port used to escape as ValueError)."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path

MAIA = [sys.executable, "-c", "import sys; from maia.cli import main; sys.exit(main())"]


def _maia(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "MAIA_HOME": str(home), "NO_COLOR": "1"}
    env.pop("MAIA_NODE", None)
    return subprocess.run([*MAIA, *args], env=env, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=60, check=False)  # fmt: skip


def test_a_malformed_node_url_is_refused_naming_it(tmp_path: Path) -> None:
    """`--node 'ws://[::1'` (and a port out of range) exits 1 with configuration_invalid
    naming the URL, in text and in --json, and prints no traceback."""
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    token = home / "node.token"
    token.write_text(secrets.token_hex(32) + "\n", encoding="ascii")
    token.chmod(0o600)
    for url in ("ws://[::1", "ws://127.0.0.1:99999/api/v1"):
        text = _maia(home, "session", "list", "--node", url)
        assert text.returncode == 1, text.stderr
        assert "Traceback" not in text.stderr
        assert f"the Node URL {url!r}" in text.stderr
        document = json.loads(_maia(home, "session", "list", "--json", "--node", url).stdout)
        assert document["error"]["code"] == "configuration_invalid"
        assert document["error"]["details"] == {"url": url}


def test_a_malformed_control_url_names_the_flag(tmp_path: Path) -> None:
    """`node start --execution --control 'ws://[::1'` is a usage error naming --control
    (exit 2), before any Node starts."""
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    started = _maia(home, "node", "start", "--execution", "--control", "ws://[::1",
                    "--enrollment-token", "x" * 43)  # fmt: skip
    assert started.returncode == 2, started.stderr
    assert "--control" in started.stderr
    assert "Traceback" not in started.stderr
    assert not (home / "node.json").exists()
