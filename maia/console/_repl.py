"""The prompt loop: read a line, run it as a CLI command (or a console built-in), repeat.

Keys: Tab completes, Ctrl-R searches the history (kept in `$MAIA_HOME/console_history`),
→ accepts the grey suggestion from history, Ctrl-C clears the line or cancels the running
command (never the console: SIGINT is caught for the console's whole life), Ctrl-D leaves.
Output printed while the prompt is shown goes above it (`patch_stdout`).
"""

from __future__ import annotations

import shlex
import signal
import sys
from collections import deque
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, TextIO

import anyio
import click
from prompt_toolkit import PromptSession
from prompt_toolkit.auto_suggest import AutoSuggestFromHistory
from prompt_toolkit.history import FileHistory
from prompt_toolkit.input import Input
from prompt_toolkit.output import Output
from prompt_toolkit.patch_stdout import patch_stdout

from maia.core import MaiaError

from ._approvals import ApprovalCache
from ._cache import FeedEvent, SessionCache
from ._completer import ConsoleCompleter
from ._keys import HELP, key_bindings
from ._output import HOLD_S, OutputGate, page, screen_lines
from ._render import render_event
from ._routines import RoutineCache
from ._seam import CommandSeam

PROMPT = "maia> "
EXIT_INTERRUPTED = 130
MAX_HELD_EVENTS = 256


class Repl:
    """One console's prompt, its built-ins and the command runner."""

    def __init__(
        self,
        *,
        client: Any,
        seam: CommandSeam,
        cache: SessionCache,
        routines: RoutineCache | None = None,
        approvals: ApprovalCache | None = None,
        history_path: Path,
        input: Input | None,
        output: Output | None,
        stdout: TextIO | None,
        stderr: TextIO | None,
    ) -> None:
        self.client = client
        self.seam = seam
        self.cache = cache
        self.routines = routines if routines is not None else RoutineCache()
        self.approvals = approvals if approvals is not None else ApprovalCache()
        self._stdout = stdout
        self._stderr = stderr
        self._input = input
        self._output = output
        self.toolbar: Callable[[], str] = lambda: ""
        self.events_on = True
        self._held: deque[str] = deque(maxlen=MAX_HELD_EVENTS)
        self._paging = False
        self._running: anyio.CancelScope | None = None
        self.interrupted = 0
        history_path.parent.mkdir(parents=True, exist_ok=True)
        self.prompt = PromptSession[str](
            PROMPT,
            history=FileHistory(str(history_path)),
            auto_suggest=AutoSuggestFromHistory(),
            completer=ConsoleCompleter(seam.command_tree(), cache, self.routines, self.approvals),
            complete_while_typing=False,
            bottom_toolbar=lambda: self.toolbar(),
            input=input,
            output=output,
            key_bindings=key_bindings(),
        )

    @property
    def out(self) -> TextIO:
        return self._stdout or sys.stdout  # read at write time: patch_stdout swaps it

    @property
    def err(self) -> TextIO:
        return self._stderr or sys.stderr

    def invalidate(self) -> None:
        app = self.prompt.app
        if app.is_running:
            app.invalidate()

    def note(self, text: str) -> None:
        self._print(f"· {text}\n")

    def show_event(self, event: FeedEvent) -> None:
        if not self.events_on:
            return
        line = render_event(event, self.cache)
        if line is not None:
            self._print(line + "\n")

    def _print(self, text: str) -> None:
        if self._paging:
            self._held.append(text)  # bounded: the oldest go first
            return
        self.out.write(text)
        self.out.flush()

    async def run(self) -> int:
        """Prompt until Ctrl-D or `exit`; returns 0."""
        with patch_stdout(raw=True):
            async with anyio.create_task_group() as group:
                group.start_soon(self._watch_sigint)
                try:
                    await self._loop()
                finally:
                    group.cancel_scope.cancel()
        return 0

    async def _watch_sigint(self) -> None:
        # Ctrl-C at the prompt is a key (raw mode); while a command runs it is SIGINT.
        with anyio.open_signal_receiver(signal.SIGINT) as signals:
            async for _ in signals:
                self.interrupted += 1
                if self._running is not None:
                    self._running.cancel()

    async def _loop(self) -> None:
        while True:
            try:
                line = await self.prompt.prompt_async(handle_sigint=False)
            except KeyboardInterrupt:
                continue
            except EOFError:
                return
            try:
                words = shlex.split(line)
            except ValueError as error:
                self.err.write(f"usage: {error}\n")
                continue
            if words and words[0] == "maia":
                words = words[1:]
            if not words:
                continue
            if words[0] in ("exit", "quit"):
                return
            await self.dispatch(words)

    async def dispatch(self, words: list[str]) -> int:
        """Run one console line (already split); returns its exit code."""
        match words:
            case ["help"]:
                self.out.write(HELP)
                return 0
            case ["feed", ("on" | "off") as state]:
                self.events_on = state == "on"
                return 0
            case ["attach", reference]:
                # The CLI's `session attach` follows the Session live (observation stream).
                self.err.write(f"following {reference}; Ctrl-C detaches\n")
                words = ["session", "attach", reference]
            case ["console", *_]:
                self.err.write("already in the console (Ctrl-D leaves)\n")
                return 2
            case ["attach", *_] | ["feed", *_]:
                self.err.write(f"usage: {words[0]} {'REF' if words[0] == 'attach' else 'on|off'}\n")
                return 2
        try:
            invocation = self.seam.parse(words)
        except click.UsageError as error:
            self.err.write(f"usage: {error.format_message()}\n")
            return 2
        except click.exceptions.Exit as done:
            return done.exit_code
        except Exception as error:  # parsing is pure: any refusal is about the line typed
            self.err.write(f"usage: {getattr(error, 'message', None) or error}\n")
            return 2
        return await self._run_command(invocation)

    async def _run_command(self, invocation: Any) -> int:
        gate: Any = OutputGate(self.out, page_lines=screen_lines(sys.__stdout__ or self.out))
        code = 0

        async def run() -> None:
            nonlocal code
            async with anyio.create_task_group() as group:
                group.start_soon(_release_later, gate)
                code = await self.seam.execute(
                    invocation,
                    self.client,
                    stdout=gate,
                    stderr=self.err,
                    interactive=True,
                    confirm=lambda question: self.confirm(question, gate),
                )
                group.cancel_scope.cancel()

        interrupted = await self._interruptible(run)
        text = gate.finish()
        if text is not None:
            await self._page(text)
        return interrupted or code

    async def confirm(self, question: str, gate: OutputGate | None = None) -> bool:
        """Ask a yes/no question at a prompt of the console's own terminal (never blocking
        the loop); anything but y/yes, Ctrl-C and Ctrl-D are no."""
        if gate is not None:
            gate.release()  # the preview printed so far must be seen before the question
        asker = PromptSession[str](input=self._input, output=self._output)
        try:
            answer = await asker.prompt_async(f"{question} [y/N] ", handle_sigint=False)
        except (KeyboardInterrupt, EOFError):
            return False
        return answer.strip().lower() in ("y", "yes")

    async def _page(self, text: str) -> None:
        self._paging = True
        try:
            if not await anyio.to_thread.run_sync(page, text):
                self.out.write(text)
                self.out.flush()
        finally:
            self._paging = False
            while self._held:
                self._print(self._held.popleft())

    async def _interruptible(self, work: Callable[[], Awaitable[Any]]) -> int:
        """Run `work` until it ends or Ctrl-C cancels it: 130 when cancelled, else 0."""
        before = self.interrupted
        with anyio.CancelScope() as scope:
            self._running = scope
            try:
                await work()
            except MaiaError as error:
                self.err.write(f"error: {error.message}\n")
                return 1
            finally:
                self._running = None
        if scope.cancelled_caught or self.interrupted != before:
            self.err.write("^C cancelled\n")
            return EXIT_INTERRUPTED
        return 0


async def _release_later(gate: OutputGate) -> None:
    await anyio.sleep(HOLD_S)
    gate.release()
