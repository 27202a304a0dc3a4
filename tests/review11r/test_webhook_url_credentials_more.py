"""A refused webhook URL must not echo a password, whatever the refusal. Session 11 cut the
userinfo from the authority before the first '/', so a password holding a '/' (the parser
then reads 'user:pa' as host and port and refuses the port) or a URL without '//' (refused
for its scheme) still echoed it. The real handlers on real storage."""

from __future__ import annotations

import pytest

from maia.core import MaiaError
from maia.service import ServiceContext

from ..maia.service.test_webhooks import SPEC, _change
from ..maia.service.test_webhooks import ctx as ctx


@pytest.mark.parametrize("url", ["http://user:pa/hunter2@127.0.0.1:9/in",  # '/' in the password
                                 "https://user:pa/hunter2@example.com/in",
                                 "ftp://user:pa/hunter2@127.0.0.1/in",
                                 "ftp:user:hunter2@127.0.0.1/in",  # no '//': the scheme's refusal
                                 "mailto:user:hunter2@example.com",
                                 "http://user:pa?x/hunter2@127.0.0.1/in"])  # fmt: skip
async def test_a_refused_url_never_echoes_its_password(ctx: ServiceContext, url: str) -> None:
    with pytest.raises(MaiaError) as caught:
        await _change(ctx, "a", {"kind": "add", "spec": {**SPEC, "url": url}})
    error = caught.value
    assert error.code == "webhook_destination_refused"
    assert "hunter2" not in error.message
    assert "hunter2" not in repr(error.details)
