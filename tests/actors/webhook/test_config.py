"""`webhooks.allowAddresses` in config.jsonc: CIDRs, refused with their path when wrong."""

from __future__ import annotations

import pytest

from actors.webhook import parse_allow_addresses
from maia.config import parse_user_config
from maia.protocol import MaiaError


def test_allow_addresses_are_read() -> None:
    """The key is read as CIDR text the guard parses; absent means none."""
    config = parse_user_config({"webhooks": {"allowAddresses": ["127.0.0.1/32", "::1/128"]}})
    assert len(parse_allow_addresses(config.webhooks.allow_addresses)) == 2
    assert parse_user_config({}).webhooks.allow_addresses == ()


@pytest.mark.parametrize(
    ("document", "path"),
    [
        ({"webhooks": {"allowAddresses": ["127.0.0.1/8"]}}, "webhooks.allowAddresses[0]"),
        ({"webhooks": {"allowAddresses": "127.0.0.1/32"}}, "webhooks.allowAddresses"),
        ({"webhooks": {"allow": []}}, "webhooks.allow"),
    ],
)
def test_bad_allow_addresses_name_the_key(document: dict[str, object], path: str) -> None:
    """A host-bits CIDR, a non-list or an unknown key is configuration_invalid at its path."""
    with pytest.raises(MaiaError) as refused:
        parse_user_config(document)
    assert refused.value.code == "configuration_invalid"
    assert refused.value.details["path"] == path
