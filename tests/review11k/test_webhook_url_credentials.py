"""A webhook URL with credentials is refused (webhook_destination_refused, reason
credentials), and the refusal echoed the whole URL, its password included, into the error
message a terminal or a script's log shows. It no longer carries the URL. The real
handlers on real storage."""

from __future__ import annotations

import pytest

from maia.core import MaiaError
from maia.service import ServiceContext

from ..maia.service.test_webhooks import SPEC, _change
from ..maia.service.test_webhooks import ctx as ctx


@pytest.mark.parametrize("url", ["http://user:hunter2-pw@127.0.0.1:9/in",
                                 "https://hunter2-pw@127.0.0.1:9/in",
                                 "ftp://user:hunter2-pw@127.0.0.1/in",  # the scheme's refusal
                                 "http://user:hunter2-pw@127.0.0.1:99999/in"])  # fmt: skip
async def test_a_refused_url_with_credentials_does_not_echo_them(
    ctx: ServiceContext, url: str
) -> None:
    with pytest.raises(MaiaError) as caught:
        await _change(ctx, "a", {"kind": "add", "spec": {**SPEC, "url": url}})
    error = caught.value
    assert error.code == "webhook_destination_refused"
    assert error.details["reason"] in ("credentials", "scheme", "port_invalid", "url_invalid")
    assert "hunter2" not in error.message
    assert "hunter2" not in repr(error.details)
