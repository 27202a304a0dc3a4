"""Where the Node is and which token opens it.

In order: an explicit URL (the CLI's `--node`), `$MAIA_NODE`, else the live Node named by
the discovery file of the home. The token is the explicit one, else the token file the
discovery file names, else `<home>/node.token`. An endpoint found through the discovery
file is looked up again on reconnect, since a restarted Node has a new port and token.
"""

from __future__ import annotations

import os
from pathlib import Path

import attrs

from maia.core import NODE_ENV, default_home, find_live_node, read_discovery, read_token


@attrs.frozen
class Endpoint:
    """A Node's URL and the bearer token for it."""

    url: str
    token: str
    home: Path | None = None  # set when found through the discovery file
    explicit_token: bool = False

    def refreshed(self) -> Endpoint:
        """The same endpoint, looked up again if it came from a discovery file."""
        if self.home is None:
            return self
        record = find_live_node(self.home)
        token = self.token if self.explicit_token else read_token(Path(record.token_path))
        return attrs.evolve(self, url=record.url, token=token)


def locate_node(
    url: str | None = None, *, token: str | None = None, home: Path | None = None
) -> Endpoint:
    """The endpoint to connect to.

    Raises `MaiaError`: unavailable (no live Node in the home), unauthenticated (no
    readable token).
    """
    folder = home if home is not None else default_home()
    chosen = url or os.environ.get(NODE_ENV) or None
    if chosen is None:
        record = find_live_node(folder)
        secret = token if token is not None else read_token(Path(record.token_path))
        return Endpoint(record.url, secret, home=folder, explicit_token=token is not None)
    if token is None:
        published = read_discovery(folder / "node.json")
        token_path = (
            Path(published.token_path)
            if published is not None and published.url == chosen
            else folder / "node.token"
        )
        token = read_token(token_path)
    return Endpoint(chosen, token)
