"""A Node URL that is not `ws://HOST:PORT/...` is refused with a typed error naming it, never
a traceback: a bad IPv6 literal or port made `urllib.parse` raise ValueError through the CLI."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from maia.client._wire import split_url
from maia.core import MaiaError


@pytest.mark.parametrize(
    "url",
    ["ws://[::1", "ws://127.0.0.1:99999/api/v1", "ws://127.0.0.1:abc/api/v1", "garbage",
     "http://127.0.0.1:1/api/v1", "ws://127.0.0.1/api/v1", "ws://:80/api/v1", ""],
)  # fmt: skip
def test_a_malformed_node_url_is_configuration_invalid(url: str) -> None:
    """Each malformed URL raises configuration_invalid carrying the URL."""
    with pytest.raises(MaiaError) as raised:
        split_url(url)
    assert raised.value.code == "configuration_invalid"
    assert raised.value.details == {"url": url}


def test_well_formed_urls_split() -> None:
    """IPv4 and IPv6 loopback URLs give host, port and path (IPv6 bracketed again)."""
    assert split_url("ws://127.0.0.1:7700/api/v1") == ("127.0.0.1", 7700, "/api/v1")
    assert split_url("ws://[::1]:7700/api/v1") == ("[::1]", 7700, "/api/v1")
    assert split_url("ws://localhost:1") == ("localhost", 1, "/")


@given(st.text(max_size=60) | st.builds(lambda t: "ws://" + t, st.text(max_size=40)))
def test_any_text_splits_or_is_refused_typed(url: str) -> None:
    """No text makes split_url raise anything but configuration_invalid."""
    codes = []
    try:
        host, port, path = split_url(url)
    except MaiaError as error:
        codes.append(error.code)
    else:
        assert host
        assert 0 <= port <= 65535
        assert path.startswith("/")
    assert codes in ([], ["configuration_invalid"])
