"""Issue 18 item 12's last gap against a real Node process (real sockets, real echo
workers): `turn show` pages a turn's items under the 1 MiB frame (`--item-cursor`), and
`turn show --full` follows the pages to print every item, saying where a cut item's rest is."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from ._node import Cli, running_node

FRAME = 1024 * 1024
ITEMS, WIDTH = 150, 8000  # 150 items of ~16 KB (text and data): over two pages


@pytest.fixture(scope="module")
def cli(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cli]:
    """A foreground Node on a fresh home, and a Project directory to run the CLI in."""
    with running_node(tmp_path_factory.mktemp("clipages")) as started:
        yield started


def _turn(cli: Cli, title: str, prompt: str) -> str:
    made = cli("session", "create", "--title", title, "--json")
    assert made.returncode == 0, made.stderr
    session = json.loads(made.stdout)["result"]["session"]["sessionId"]
    sent = cli("turn", "send", session, prompt, "--wait", "--timeout", "120s", "--json")
    assert sent.returncode == 0, sent.stderr
    return str(json.loads(sent.stdout)["result"]["turn"]["turnId"])


@pytest.fixture(scope="module")
def many(cli: Cli) -> str:
    """A completed turn with 150 reasoning items of 8,000 characters and its reply."""
    return _turn(cli, "many-items", f"/items {ITEMS} {WIDTH}")


def _expected(index: int) -> str:
    return f"{index}:" + "y" * (WIDTH - len(f"{index}:"))


def test_turn_show_pages_the_items_each_reply_under_the_frame(cli: Cli, many: str) -> None:
    """Following nextItemCursor lists every item once, in order, over several pages, each
    reply under 1 MiB; the last page has no cursor."""
    seen: list[dict[str, object]] = []
    args: tuple[str, ...] = ()
    for _ in range(20):
        shown = cli("turn", "show", many, *args, "--json")
        assert shown.returncode == 0, shown.stderr
        assert len(shown.stdout.encode()) < FRAME
        page = json.loads(shown.stdout)["result"]
        assert page["items"], "every page lists at least one item"
        seen.extend(page["items"])
        if not page["itemsTruncated"]:
            assert page.get("nextItemCursor") is None
            break
        args = ("--item-cursor", page["nextItemCursor"])
    else:
        pytest.fail("the pages did not end")
    assert args, "one page held them all: the test proves nothing"
    assert [i["sequence"] for i in seen] == sorted({int(i["sequence"]) for i in seen})  # type: ignore[call-overload]
    reasoning = [i["text"] for i in seen if i["kind"] == "reasoning"]
    assert reasoning == [_expected(n) for n in range(ITEMS)]
    assert [i["text"] for i in seen if i["kind"] == "message"] == ["itemized"]


def test_turn_show_full_prints_every_item(cli: Cli, many: str) -> None:
    """`--full --json` is one document with all 151 items whole; `--full` (human) prints
    each item's header and text; `--jsonl` one item a line."""
    whole = cli("turn", "show", many, "--full", "--json")
    assert whole.returncode == 0, whole.stderr
    result = json.loads(whole.stdout)["result"]
    assert (result["itemsTruncated"], result["nextItemCursor"]) == (False, None)
    assert [i["text"] for i in result["items"]] == [_expected(n) for n in range(ITEMS)] + [
        "itemized"
    ]
    assert len(whole.stdout.encode()) > FRAME  # more than any one reply could carry
    lines = cli("turn", "show", many, "--full", "--jsonl")
    assert lines.returncode == 0, lines.stderr
    assert [json.loads(line)["sequence"] for line in lines.stdout.splitlines()] == [
        i["sequence"] for i in result["items"]
    ]
    human = cli("turn", "show", many, "--full")
    assert human.returncode == 0, human.stderr
    assert human.stdout.count("--- item ") == ITEMS + 1
    assert all(_expected(n) in human.stdout for n in (0, 77, ITEMS - 1))
    assert "more items" not in human.stdout
    paged = cli("turn", "show", many)
    assert "(more items: --item-cursor " in paged.stdout


def test_full_says_where_a_cut_items_rest_is(cli: Cli) -> None:
    """A 700,000-character reply's item is its start, and `--full` names the artifact file
    that holds the rest."""
    turn_id = _turn(cli, "cut-item", "/spew 700000")
    human = cli("turn", "show", turn_id, "--full")
    assert human.returncode == 0, human.stderr
    shown = json.loads(cli("turn", "show", turn_id, "--json").stdout)["result"]
    (item,) = [i for i in shown["items"] if i["kind"] == "message"]
    assert f"(truncated: the rest is in {item['artifactPath']})" in human.stdout
    assert Path(item["artifactPath"]).stat().st_size == 700_000 - 262_144


def test_escape_heavy_prompt_and_reply_stay_under_the_frame(cli: Cli, tmp_path: Path) -> None:
    """A 60,000-character prompt of control characters (6 bytes each as JSON), echoed back:
    prompt, outputText and the item would pass 1 MiB together; the reply stays under it,
    the item is marked cut, and the prompt and outputText come whole."""
    prompt = "\x01" * 60_000
    (tmp_path / "prompt.txt").write_text(prompt, encoding="utf-8")
    made = cli("session", "create", "--title", "escapes", "--json")
    session = json.loads(made.stdout)["result"]["session"]["sessionId"]
    sent = cli("turn", "send", session, "--file", str(tmp_path / "prompt.txt"), "--wait",
               "--timeout", "120s", "--json")  # fmt: skip
    assert sent.returncode == 0, sent.stderr
    turn_id = json.loads(sent.stdout)["result"]["turn"]["turnId"]
    shown = cli("turn", "show", turn_id, "--json")
    assert shown.returncode == 0, shown.stderr
    assert len(shown.stdout.encode()) < FRAME
    result = json.loads(shown.stdout)["result"]
    assert result["prompt"] == prompt
    assert result["turn"]["outputText"] == prompt
    (item,) = result["items"]
    assert item["truncated"] is True
    assert prompt.startswith(item["text"])
    assert len(item["text"]) < len(prompt)


def test_a_bad_item_cursor_is_refused_with_its_code(cli: Cli, many: str) -> None:
    """A cursor that is not the Node's, or one issued for another turn, is invalid_cursor."""
    garbage = cli("turn", "show", many, "--item-cursor", "not-a-cursor", "--json")
    assert garbage.returncode != 0
    assert json.loads(garbage.stdout)["error"]["code"] == "invalid_cursor"
    first = json.loads(cli("turn", "show", many, "--json").stdout)["result"]
    other = _turn(cli, "other-turn", "hello")
    crossed = cli("turn", "show", other, "--item-cursor", first["nextItemCursor"], "--json")
    assert crossed.returncode != 0
    assert json.loads(crossed.stdout)["error"]["code"] == "invalid_cursor"
