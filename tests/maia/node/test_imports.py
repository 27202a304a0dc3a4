"""What a process that starts a Node loads: no HTTP client stack, no click, no attrs source."""

from __future__ import annotations

import json
import linecache
import subprocess
import sys

import attrs

import maia.node  # noqa: F401  (installs the linecache filter, as in a Node process)

PROBE = """
import json, linecache, sys
import maia.node.__main__
import maia.node._service
print(json.dumps({
    "modules": sorted(m for m in ("httpx", "httpcore", "anyio", "maia.client", "click", "maia.cli")
                      if m in sys.modules),
    "attrsSource": sum(k.startswith("<attrs generated ") for k in linecache.cache),
}))
"""


def test_the_node_entry_loads_no_http_client_stack() -> None:
    """`python -m maia.node`'s imports leave out httpx, httpcore, anyio, the SDK, click and the
    CLI (they load at the first webhook, or in the CLI's commands), and file no attrs source."""
    done = subprocess.run(
        [sys.executable, "-P", "-c", PROBE], capture_output=True, text=True, timeout=120, check=True
    )
    found = json.loads(done.stdout)
    assert found == {"modules": [], "attrsSource": 0}


def test_attrs_classes_work_without_their_source_filed() -> None:
    """A class attrs makes after the filter is in place works and files no source; other
    entries are still filed and read back."""

    @attrs.frozen
    class Point:
        x: int
        y: int = 2

    assert Point(1) == Point(1, 2)
    assert "Point(x=1, y=2)" in repr(Point(1))
    assert not [k for k in linecache.cache if k.startswith("<attrs generated ")]
    assert linecache.getline(__file__, 1).startswith('"""What a process')
    linecache.cache["<probe>"] = (3, None, ["x\n"], "<probe>")
    assert linecache.getline("<probe>", 1) == "x\n"
    del linecache.cache["<probe>"]
