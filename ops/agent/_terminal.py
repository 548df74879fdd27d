"""The console's terminal: a readline prompt with history, and output that keeps out of it.

Theory of operation
-------------------
On a terminal (stdin and stdout both ttys) lines are read with `input()` under readline, in a
worker thread, so the trio loop goes on receiving while the user types: line editing, history
(kept in `history_path()`, at most HISTORY_LINES) and Tab completion of the commands and of
the inventory's tool names. A message that arrives while the prompt is up is written above it:
the prompt's line is cleared, the message written, and the prompt redrawn with what the user
had typed so far, so a message never lands in the middle of the input. The terminal's modes
are saved first and restored at the end, however the console ends (Ctrl-C included), and the
history written.

Anywhere else (a pipe, a file, a test) there is no prompt, no readline and no history file:
lines are read plainly and output is written as it comes.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from types import ModuleType
from typing import Any, Final, TextIO

import trio

__all__ = ["HISTORY_LINES", "PROMPT", "Terminal", "history_path"]

PROMPT: Final = "agent> "
HISTORY_LINES: Final = 1000
CLEAR_LINE: Final = "\r\x1b[2K"


def history_path() -> Path:
    """`$XDG_STATE_HOME/lineup/agent_history`, else `~/.local/state/lineup/agent_history`."""
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "lineup" / "agent_history"


class Terminal:
    """Where the console reads commands and writes lines. `words()` gives the completions
    (commands, tool names) at the time of each Tab. Use as a context manager."""

    def __init__(
        self,
        words: Callable[[], Iterable[str]] = tuple,
        *,
        stdin: TextIO | None = None,
        stdout: TextIO | None = None,
        stderr: TextIO | None = None,
    ) -> None:
        self.stdin = stdin or sys.stdin
        self.stdout = stdout or sys.stdout
        self.stderr = stderr or sys.stderr
        self._words = words
        self.tty = _isatty(self.stdin) and _isatty(self.stdout)
        self._readline: ModuleType | None = None
        self._modes: list[Any] | None = None
        self._prompting = False  # a prompt is on the screen, waiting for input

    # ----------------------------------------------------------------------- set-up

    def __enter__(self) -> Terminal:
        if self.tty:
            self._modes = _save_modes(self.stdin)
            self._readline = _load_readline()
        if self._readline is not None:
            self._set_up(self._readline)
        return self

    def __exit__(self, *exc: object) -> None:
        self._prompting = False
        if self._readline is not None:
            try:
                path = history_path()
                path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
                self._readline.write_history_file(str(path))
            except OSError:
                pass  # no history is no failure
        if self._modes is not None:
            _restore_modes(self.stdin, self._modes)

    def _set_up(self, readline: ModuleType) -> None:
        try:
            readline.read_history_file(str(history_path()))
        except OSError:
            pass  # the first run
        readline.set_history_length(HISTORY_LINES)
        readline.set_completer_delims(" \t\n")
        readline.set_completer(self._complete)
        if "libedit" in (readline.__doc__ or ""):  # macOS's readline
            readline.parse_and_bind("bind ^I rl_complete")
        else:
            readline.parse_and_bind("tab: complete")

    def _complete(self, text: str, state: int) -> str | None:
        matches = sorted({w for w in self._words() if w.startswith(text)})
        return matches[state] if state < len(matches) else None

    # ----------------------------------------------------------------------- lines

    async def read_line(self) -> str | None:
        """The next command line (without its newline), or None at the end of input."""
        if not self.tty:
            line = await trio.to_thread.run_sync(self.stdin.readline, abandon_on_cancel=True)
            return line.rstrip("\n") if line else None
        self._prompting = True
        try:
            return await trio.to_thread.run_sync(_prompted, abandon_on_cancel=True)
        finally:
            self._prompting = False

    def out(self, line: str) -> None:
        """A line of output (a received message) on stdout, above the prompt if one is up."""
        self._write(self.stdout, line)

    def note(self, line: str) -> None:
        """A line about the console itself (sent, failed) on stderr, above any prompt."""
        self._write(self.stderr, line)

    def _write(self, stream: TextIO, line: str) -> None:
        if not self._prompting:
            stream.write(line + "\n")
            stream.flush()
            return
        typed = self._readline.get_line_buffer() if self._readline is not None else ""
        self.stdout.write(CLEAR_LINE)
        self.stdout.flush()
        stream.write(line + "\n")
        stream.flush()
        self.stdout.write(PROMPT + typed)
        self.stdout.flush()


def _prompted() -> str | None:
    try:
        return input(PROMPT)
    except EOFError:
        return None


def _isatty(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


def _load_readline() -> ModuleType | None:
    try:
        import readline
    except ImportError:  # a Python built without it: plain input() still edits nothing
        return None
    return readline


def _save_modes(stream: TextIO) -> list[Any] | None:
    try:
        import termios

        return list(termios.tcgetattr(stream.fileno()))
    except (ImportError, OSError, ValueError):
        return None


def _restore_modes(stream: TextIO, modes: list[Any]) -> None:
    try:
        import termios

        termios.tcsetattr(stream.fileno(), termios.TCSADRAIN, modes)
    except (ImportError, OSError, ValueError):
        pass
