"""`run_console`: connect once, then the prompt loop with its background tasks.

One SDK client serves the whole console (commands, the event feed, the toolbar). Before the
first prompt: catch the feed up (so only new events print), seed the Session cache with
`session.list`, ask `node.status` once. Then three tasks share the asyncio loop: the prompt
(`Repl`), the feed (events above the prompt, the cache, a toolbar refresh), and the toolbar
refresher. A Node that cannot be reached is reported with the command that starts one, and
the console exits 6 (the CLI's "Node unreachable").
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable
from contextlib import AsyncExitStack
from pathlib import Path
from typing import Any, TextIO

import anyio
import attrs
from prompt_toolkit.input import Input
from prompt_toolkit.output import Output

from maia.client import default_home, open_client
from maia.core import MaiaError

from ._approvals import ApprovalCache
from ._cache import SessionCache
from ._feed import EventFeed, StreamFeed
from ._repl import Repl
from ._routines import RoutineCache
from ._seam import CliSeam, CommandSeam
from ._status import NodeState, StatusTracker

EXIT_OK, EXIT_ERROR, EXIT_AUTH, EXIT_UNREACHABLE = 0, 1, 4, 6
SEED_PAGES = 10  # at most 1,000 Sessions seeded; the feed adds the rest as they move
RECONNECT_S = 2.0
HISTORY_FILE = "console_history"


@attrs.frozen
class ConsoleOptions:
    """How to run the console. Tests pass a pipe input and their own sinks."""

    home: Path | None = None
    url: str | None = None
    token: str | None = None
    seam: CommandSeam | None = None
    input: Input | None = None
    output: Output | None = None
    stdout: TextIO | None = None  # None: the process's (patched) stdout at write time
    stderr: TextIO | None = None


def run_console(
    *, home: str | Path | None = None, url: str | None = None, token: str | None = None
) -> int:
    """Run the interactive console until Ctrl-D or `exit`; returns the exit code."""
    # console_history holds every prompt typed: whatever it creates is owner-only.
    os.umask(0o077)
    options = ConsoleOptions(home=Path(home) if home is not None else None, url=url, token=token)
    return asyncio.run(console_main(options))


def _unreachable_message(error: MaiaError, home: Path) -> str:
    where = f" --home {home}" if home != default_home() else ""
    return (
        f"maia console: {error.message}\n"
        f"Start the Node first:  maia node start --detach{where}\n"
        f"then run:              maia console{where}\n"
    )


async def console_main(options: ConsoleOptions) -> int:
    """The console on the current event loop (asyncio or trio). Returns the exit code."""
    stderr = options.stderr or sys.stderr
    home = options.home or default_home()
    async with AsyncExitStack() as stack:
        try:
            client = await stack.enter_async_context(
                open_client(options.url, token=options.token, home=home)
            )
        except MaiaError as error:
            if error.code == "unavailable":
                stderr.write(_unreachable_message(error, home))
                return EXIT_UNREACHABLE
            stderr.write(f"maia console: {error.message}\n")
            return EXIT_AUTH if error.code == "unauthenticated" else EXIT_ERROR
        return await _serve(options, client, home)


async def _seed_pages(
    client: Any,
    op_id: str,
    params: dict[str, Any],
    seed: Callable[[dict[str, Any]], None],
    *,
    optional: bool,
) -> None:
    """`seed` each page of `op_id`, at most SEED_PAGES (the caches keep 500); an `optional`
    op a Node does not serve (an older one) is left out."""
    for _ in range(SEED_PAGES):
        try:
            page = await client.request(op_id, params)
        except MaiaError as error:
            if optional and error.code in ("unknown_method", "command_not_implemented"):
                return
            raise
        seed(page)
        if not page.get("nextCursor"):
            return
        params = {**params, "cursor": page["nextCursor"]}


async def _seed(client: Any, cache: SessionCache) -> None:
    await _seed_pages(client, "session.list", {"limit": 100},
                      lambda page: cache.seed(page["sessions"]), optional=False)  # fmt: skip


async def _seed_routines(client: Any, routines: RoutineCache) -> None:
    """Routine IDs for completion; a Node without routines (an older one) is left out."""
    await _seed_pages(client, "routine.list", {"limit": 100},
                      lambda page: routines.seed(page["routines"]), optional=True)  # fmt: skip


async def _seed_approvals(client: Any, approvals: ApprovalCache) -> None:
    """Pending approval IDs for completion; a Node without approvals is left out."""
    await _seed_pages(client, "approval.list", {"state": "pending", "limit": 100},
                      lambda page: approvals.seed(page.get("approvals") or ()),
                      optional=True)  # fmt: skip


async def _serve(options: ConsoleOptions, client: Any, home: Path) -> int:
    cache = SessionCache()
    routines = RoutineCache()
    approvals = ApprovalCache()
    feed = StreamFeed(client)
    try:
        await feed.catch_up()
        await _seed(client, cache)
        await _seed_routines(client, routines)
        await _seed_approvals(client, approvals)
    except MaiaError as error:
        (options.stderr or sys.stderr).write(f"maia console: {error.message}\n")
        await feed.aclose()
        return EXIT_ERROR
    repl = Repl(
        client=client,
        seam=options.seam or CliSeam(),
        cache=cache,
        routines=routines,
        approvals=approvals,
        history_path=home / HISTORY_FILE,
        input=options.input,
        output=options.output,
        stdout=options.stdout,
        stderr=options.stderr,
    )
    lost = [False]  # whether the Node was reachable once and then was not

    def changed(state: NodeState) -> None:
        if not state.reachable:
            if not lost[0]:
                repl.note(f"the Node is unreachable ({state.problem}); start it with: "
                          "maia node start --detach")  # fmt: skip
            lost[0] = True
        elif lost[0]:
            lost[0] = False
            repl.note("the Node is back")
        repl.invalidate()

    tracker = StatusTracker(client, changed)
    repl.toolbar = lambda: tracker.state.toolbar()
    await tracker.refresh()
    try:
        async with anyio.create_task_group() as group:
            group.start_soon(tracker.serve)
            group.start_soon(_pump, feed, repl, tracker)
            code = await repl.run()
            group.cancel_scope.cancel()
    finally:
        await feed.aclose()
    return code


async def _pump(feed: EventFeed, repl: Repl, tracker: StatusTracker) -> None:
    """Events to the cache, the screen and the toolbar. The stream resumes by itself; when
    it gives up (the Node is gone), try again every `RECONNECT_S`."""
    while True:
        try:
            async for event in feed.follow():
                repl.routines.apply(event)
                repl.approvals.apply(event)
                watched = event.event_type.startswith(("session.", "turn.", "approval."))
                if repl.cache.apply(event) or watched:
                    tracker.poke()
                repl.show_event(event)
        except MaiaError as error:
            if error.code != "unavailable":
                repl.note(f"event feed stopped: {error.message}")
                return
        tracker.poke()
        await anyio.sleep(RECONNECT_S)
