"""The Execution Node's evidence outbox and the token pin, as logic: what goes on the wire
after a reconnect, in which order, and what an acknowledgement releases (the real link is
tested through the fault proxy in test_evidence_resend.py, the pin over real TLS in
test_wss_pinning.py)."""

from __future__ import annotations

from pathlib import Path

import click
import pytest
from hypothesis import given
from hypothesis import strategies as st

from actors.machine import make_token, parse_token, pin_token, split_token
from maia.cli._machine_cmd import machine_argv, machine_children
from maia.core import MaiaError
from maia.machines import EvidenceOutbox
from supervision.leases import SPOOL_MAX_RECORDS


class Wire:
    """A link that records what it sent, and can be down."""

    def __init__(self) -> None:
        self.sent: list[object] = []
        self.up = True

    async def send(self, frame: object) -> bool:
        if self.up:
            self.sent.append(frame)
        return self.up


async def test_a_rewind_sends_every_unacknowledged_record_again_in_order() -> None:
    """Records 1-4 sent, 1-2 acknowledged; after a rewind 3 and 4 go again, before 5."""
    wire = Wire()
    outbox = EvidenceOutbox(wire.send)
    for sequence in range(1, 5):
        outbox.keep("s", sequence, f"r{sequence}")
        await outbox.flush()
    outbox.acknowledge("s", 2)
    assert outbox.held("s") == 2
    outbox.rewind()
    outbox.keep("s", 5, "r5")
    await outbox.flush()
    assert wire.sent == ["r1", "r2", "r3", "r4", "r3", "r4", "r5"]


async def test_records_kept_while_the_link_is_down_go_out_once_it_is_up() -> None:
    """A failed send keeps the record and stops (no later record overtakes it)."""
    wire = Wire()
    outbox = EvidenceOutbox(wire.send)
    wire.up = False
    outbox.keep("s", 1, "r1")
    outbox.keep("s", 2, "r2")
    assert await outbox.flush() == 0
    wire.up = True
    outbox.rewind()
    assert await outbox.resend_all() == 2
    assert wire.sent == ["r1", "r2"]
    assert outbox.resent == 2


async def test_an_exit_waits_behind_records_and_is_sent_again_after_a_rewind() -> None:
    """An exit queued while records are unsent goes after them; a rewind sends the latest
    exits again, and hello lists their attempts."""
    wire = Wire()
    outbox = EvidenceOutbox(wire.send)
    wire.up = False
    outbox.keep("s", 1, "r1")
    await outbox.send_after_records("attempt_a", "exit-a", exit_frame=True)
    assert outbox.waiting_attempts() == ("attempt_a",)
    wire.up = True
    outbox.rewind()
    await outbox.flush()
    assert wire.sent == ["r1", "exit-a"]
    outbox.acknowledge("s", 1)
    outbox.rewind()
    await outbox.flush()
    assert wire.sent == ["r1", "exit-a", "exit-a"]
    assert outbox.waiting_attempts() == ("attempt_a",)


async def test_an_exit_waits_for_its_turns_records_to_be_acknowledged() -> None:
    """An attempt's exit goes only once Control acknowledged that attempt's newest record
    (its Session took the turn's end first); another attempt's frames do not wait."""
    wire = Wire()
    outbox = EvidenceOutbox(wire.send)
    outbox.keep("s", 1, "r1", attempt_id="attempt_a")
    await outbox.flush()
    await outbox.send_after_records("attempt_a", "exit-a", exit_frame=True)
    await outbox.send_after_records("attempt_b", "init-b")
    assert wire.sent == ["r1", "init-b"]
    outbox.acknowledge("s", 1)
    await outbox.flush()
    assert wire.sent == ["r1", "init-b", "exit-a"]


async def test_an_acknowledgement_never_moves_back_and_frees_its_room() -> None:
    """A lower acknowledgement changes nothing; at the record quota `held` is raised and
    nothing is dropped; an acknowledgement makes room again."""
    outbox = EvidenceOutbox(Wire().send)
    for sequence in range(1, SPOOL_MAX_RECORDS + 1):
        outbox.keep("s", sequence, sequence)
    with pytest.raises(MaiaError) as raised:
        outbox.check_room("s", 1)
    assert raised.value.code == "held"
    assert outbox.held("s") == SPOOL_MAX_RECORDS
    outbox.acknowledge("s", 10)
    outbox.acknowledge("s", 5)
    assert outbox.held("s") == SPOOL_MAX_RECORDS - 10
    outbox.check_room("s", 1)


@given(st.text(max_size=300))
def test_split_token_never_raises_and_keeps_unpinned_text(text: str) -> None:
    """Any text splits: without a 64-hex fifth part it comes back whole, unpinned."""
    token, pin = split_token(text)
    if pin is None:
        assert token == text
    else:
        assert f"{token}.{pin}" == text


@given(st.integers(min_value=1, max_value=999_999_999), st.binary(min_size=32, max_size=32),
       st.one_of(st.none(), st.text("0123456789abcdef", min_size=64, max_size=64)))  # fmt: skip
def test_a_pinned_token_splits_into_the_token_control_checks(
    incarnation: int, key: bytes, pin: str | None
) -> None:
    """pin_token then split_token gives back the token Control parses and the pin."""
    token = make_token(key, "machine_" + "a" * 32, incarnation)
    assert split_token(pin_token(token, pin)) == (token, pin)
    assert parse_token(split_token(pin_token(token, pin))[0]) is not None


def test_tls_flags_come_in_pairs_and_need_a_listener() -> None:
    """--machines-cert without --machines-key (or without --machines-listen) is refused
    naming the flag; nothing starts."""
    with pytest.raises(click.BadParameter) as missing:
        machine_children({"machines_listen": "127.0.0.1:0", "machines_cert": Path("c.pem")})
    assert "--machines-key" in str(missing.value.param_hint)
    with pytest.raises(click.BadParameter, match="needs --machines-listen"):
        machine_children({"machines_cert": Path("c.pem"), "machines_key": Path("c.key")})
    with pytest.raises(click.BadParameter, match=r"cannot read"):
        machine_children({"machines_listen": "127.0.0.1:0",
                          "machines_cert": Path("/nonexistent.pem"),
                          "machines_key": Path("/nonexistent.key")})  # fmt: skip


def test_a_detached_node_gets_the_tls_flags_again() -> None:
    """`--detach` re-runs the Node with the same flags: the certificate and key as absolute
    paths."""
    argv = machine_argv({"machines_listen": "127.0.0.1:0", "machines_cert": Path("c.pem"),
                         "machines_key": Path("c.key")})  # fmt: skip
    assert argv[:2] == ["--machines-listen", "127.0.0.1:0"]
    assert argv[argv.index("--machines-cert") + 1] == str(Path("c.pem").resolve())
    assert argv[argv.index("--machines-key") + 1] == str(Path("c.key").resolve())
