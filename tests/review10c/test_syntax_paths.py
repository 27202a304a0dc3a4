"""A syntax problem names the key being read in `details.path`, not `$` for all of them: a
repeated key its own path (`swarm.capacity.maxLiveSessions`), a bad value its member, a
missing comma its object; `$` stays for the document itself. Before, every syntax problem
(a duplicate key included) said `$`, so a refusal did not name the field."""

from __future__ import annotations

from pathlib import Path

import pytest
import trio

from maia.config import JsoncError, UserConfig, loads_jsonc
from maia.protocol import ConfigScopeInput, MaiaError, SystemClock
from maia.service import ServiceContext, open_services
from maia.service._config import _config_admit_preview
from storage import open_storage

CASES = [
    ('{"swarm": {"capacity": {"maxLiveSessions": 3, "maxLiveSessions": 4}}}',
     ("swarm", "capacity", "maxLiveSessions")),
    ('{"executors": {"a": {"argv": ["x" "y"]}}}', ("executors", "a", "argv")),
    ('{"swarm": {"defaultTimezone": nope}}', ("swarm", "defaultTimezone")),
    ('{"sessions": {"workerIdleMs": 1e400}}', ("sessions", "workerIdleMs")),
    ('{"defaults": {"modelRef" 1}}', ("defaults", "modelRef")),
    ('{"swarm": {} "x": 1}', ()),
    ("[1, 2", ()),
    ("{} {}", ()),
]  # fmt: skip


@pytest.mark.parametrize(("text", "path"), CASES)
def test_the_reader_names_the_key(text: str, path: tuple[str, ...]) -> None:
    """JsoncError.path is the key being read where the reader stopped."""
    with pytest.raises(JsoncError) as caught:
        loads_jsonc(text)
    assert caught.value.path == path


async def _preview_refusal(home: Path) -> MaiaError:
    async with (
        open_storage(home / "maia.db", clock=SystemClock(), synchronous="NORMAL") as store,
        open_services(store, clock=SystemClock(), home=home, config=UserConfig()) as ctx,
    ):
        assert isinstance(ctx, ServiceContext)
        with pytest.raises(MaiaError) as caught:
            await _config_admit_preview(ctx, ConfigScopeInput())
        return caught.value


def test_admission_refusal_names_the_repeated_key(tmp_path: Path) -> None:
    """config.admit.preview of a file repeating a key: configuration_invalid, details.path
    the key, with its line and column."""
    home = tmp_path / "home"
    home.mkdir(mode=0o700)
    (home / "config.jsonc").write_text(
        '{\n  "swarm": {"capacity": {\n    "maxLiveSessions": 3,\n    "maxLiveSessions": 4}}}'
    )
    (home / "config.jsonc").chmod(0o600)
    refusal = trio.run(_preview_refusal, home)
    assert refusal.code == "configuration_invalid"
    details = refusal.details
    assert (details["path"], details["line"], details["column"]) == (
        "swarm.capacity.maxLiveSessions", 4, 5)  # fmt: skip
    assert details["problems"][0]["path"] == "swarm.capacity.maxLiveSessions"
