"""The command-line fixes of issue 18 that need no Node: `receipt get` keeps its look-up key,
`turn wait --timeout`, `turn send --file`, non-UTF-8 arguments refused, `--file` reading."""

from __future__ import annotations

import io
import subprocess
from contextlib import redirect_stderr
from pathlib import Path

import click
import pytest

from maia.cli import main, parse_invocation
from maia.protocol import REGISTRY, MaiaError

from ._node import MAIA


def test_receipt_get_by_receipt_id_invents_no_command_id() -> None:
    """`receipt get --receipt-id ID` asks for exactly that: no generated commandId beside it
    (the op takes exactly one of the two); `--command-id` is passed as given."""
    by_receipt = parse_invocation(["receipt", "get", "--receipt-id", "receipt_1"])
    assert by_receipt.params == {"receiptId": "receipt_1"}
    assert not by_receipt.command_id_generated
    by_command = parse_invocation(["receipt", "get", "--command-id", "command_7"])
    assert by_command.params == {"commandId": "command_7"}


def test_turn_wait_takes_a_timeout() -> None:
    """`turn wait TURN --timeout 90s` parses (it was an unknown option)."""
    invocation = parse_invocation(["turn", "wait", "turn_1", "--timeout", "90s"])
    assert (invocation.operation_id, invocation.timeout_s) == ("turn.wait", 90.0)
    assert invocation.params["turnId"] == "turn_1"


def test_turn_send_takes_its_text_from_a_file_or_stdin() -> None:
    """`turn send S --file PATH` leaves the text to be read at run time; `-` is stdin; the
    text and --file exclude each other, and one of them is needed."""
    invocation = parse_invocation(["turn", "send", "demo", "--file", "prompt.txt"])
    assert invocation.text_file == "prompt.txt"
    assert "text" not in invocation.params
    assert parse_invocation(["turn", "send", "demo", "--file", "-"]).text_file == "-"
    assert parse_invocation(["turn", "send", "demo", "inline"]).text_file is None
    with pytest.raises(click.UsageError, match="not both"):
        parse_invocation(["turn", "send", "demo", "inline", "--file", "prompt.txt"])
    with pytest.raises(click.UsageError, match="missing argument TEXT"):
        parse_invocation(["turn", "send", "demo"])


def test_a_text_file_is_read_whole_bounded_and_as_utf8(tmp_path: Path) -> None:
    """The file's text comes back exactly (newlines kept); too large, not UTF-8 or missing
    is a validation_failed naming `text`, never a traceback."""
    from maia.cli._text_file import max_characters, read_text_file

    send = REGISTRY.get("turn.send")
    assert send is not None
    limit = max_characters(send, "text")
    assert limit == 65_536  # the registry's bound, not a copy of it
    path = tmp_path / "prompt.txt"
    path.write_text("première ligne\nsecond\n", encoding="utf-8")
    assert read_text_file(str(path), limit) == "première ligne\nsecond\n"
    assert read_text_file("-", limit, io.BytesIO(b"from stdin")) == "from stdin"
    problems = {
        "large": io.BytesIO(b"x" * (limit * 4 + 1)),
        "latin1": io.BytesIO("café".encode("latin-1")),
    }
    for name, stream in problems.items():
        with pytest.raises(MaiaError) as refused:
            read_text_file("-", limit, stream)
        assert refused.value.code == "validation_failed", name
        assert refused.value.details["path"] == "text"
    with pytest.raises(MaiaError, match="cannot read"):
        read_text_file(str(tmp_path / "absent.txt"), limit)


def test_non_utf8_arguments_are_refused_with_exit_2() -> None:
    """An argument Python could only decode with surrogates is refused before anything runs:
    a clear message and exit 2 (in-process: the decoded form `main` receives)."""
    stderr = io.StringIO()
    with redirect_stderr(stderr):
        code = main(["session", "create", "--title", "ab\udcff"])
    assert code == 2
    assert "argument 4 is not valid UTF-8 (byte 0xff at character 2)" in stderr.getvalue()


def test_non_utf8_bytes_in_a_real_argv_do_not_crash() -> None:
    """The real thing: raw bytes in argv (here an unknown command, whose echo used to raise
    UnicodeEncodeError on stderr) give the message and exit 2, no traceback."""
    done = subprocess.run([*MAIA, "session", b"\xff\xfe"], capture_output=True, timeout=60,
                          check=False)  # fmt: skip
    stderr = done.stderr.decode("utf-8", "replace")
    assert done.returncode == 2, stderr
    assert "argument 2 is not valid UTF-8 (byte 0xff" in stderr
    assert "Traceback" not in stderr
