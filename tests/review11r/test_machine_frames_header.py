"""`Maia-Machine-Frames` (session 11) as a stranger may send it on the machines listener:
junk, huge, duplicated, non-ASCII, case-changed, padded. Only an exact known name in one
header of at most 256 bytes counts; anything else names no frame (never an error, never a
frame Control would then send to a Node that cannot read it)."""

from __future__ import annotations

import base64

import pytest

from actors.machine._secrets import make_credential, new_machine_id
from maia.machines._gate import LINK_PATH, Admitted, _frames, check_machine_upgrade


@pytest.mark.parametrize(("values", "frames"), [
    ([b"abandon"], {"abandon"}),
    ([b" abandon , abandon ,x"], {"abandon"}),
    ([b"ABANDON"], set()),
    ([b"abandon", b"abandon"], set()),  # a repeated header: ignored
    ([b"abandon," + b"x" * 300], set()),  # oversized
    ([b"\xff\xfe,abandon"], {"abandon"}),
    ([b"\xffabandon"], set()),
    ([b""], set()),
    ([b",,,"], set()),
    ([b"abandon\x00"], set()),
    ([], set()),
])  # fmt: skip
def test_junk_frames_headers_name_nothing_unknown(values: list[bytes], frames: set[str]) -> None:
    assert _frames(values) == frames


def test_a_header_repeated_under_another_case_is_a_repeat() -> None:
    """The names are matched case-insensitively, so two spellings are two values: none."""
    bearer = b"Bearer " + make_credential(new_machine_id()).encode()
    base = [(b"Sec-WebSocket-Key", base64.b64encode(b"k" * 16)), (b"Authorization", bearer)]
    one = check_machine_upgrade(LINK_PATH, [*base, (b"maia-machine-frames", b"abandon")])
    assert isinstance(one, Admitted)
    assert one.frames == {"abandon"}
    two = check_machine_upgrade(LINK_PATH, [*base, (b"maia-machine-frames", b"abandon"),
                                            (b"MAIA-MACHINE-FRAMES", b"abandon")])  # fmt: skip
    assert isinstance(two, Admitted)
    assert two.frames == frozenset()
