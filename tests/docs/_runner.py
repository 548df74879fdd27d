"""Runs a page's examples as a reader runs them: its code blocks, in order, in an empty folder,
with the real `lineup` (each command a process of its own, a real runtime where the page starts
one). `test_miniapp_guide.py` follows docs/miniapp-guide.md with it, `test_pages.py` every
other page of docs/ and README.md.

The conventions (docs/contributing.md says them for readers too):
- A `console` block: each `$ COMMAND` runs in bash, in the page's folder; the lines after
  it, up to the next `$`, are what it prints on stdout (stderr is not compared). A line `...`
  stands for any lines (none included); `...` inside a line for any text. A command exits 0,
  unless it ends with the comment `# exit status N`.
- A command that ends with `&` (`lineup run ... &`) is started in the background and stopped
  at the end; its expected lines are waited for (with a deadline) in what it prints. A
  `console` block that opens with output rather than a `$` shows what that background command
  prints next: each line in order, other lines may come between; a line `^C` interrupts it
  (SIGINT), and what follows is what it prints as it stops, with exit status 0.
- A `diff` block edits files: `+++ b/PATH` names the file, each `@@` starts a hunk, whose
  context and `-` lines must be found in the file exactly once.
- A block whose first line is a comment naming a file (`# file: PATH`, `// file: PATH`) is
  written to PATH, that line included.
- Any other block (`text`, `sh`, …) is for reading only.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Final

import pytest

import lineup
from lineup.tests.support.process import LineReader

ROOT: Final = Path(lineup.__file__).parent  # the repository
GUIDE: Final = ROOT / "docs" / "miniapp-guide.md"  # `test_miniapp_guide.py` follows it
COMMAND_TIMEOUT: Final = 120.0  # seconds, one foreground command
OUTPUT_WAIT: Final = 60.0  # seconds, for a line of the background command
STOP_WAIT: Final = 30.0
FENCE: Final = re.compile(r"^```([\w-]*)[^\n]*\n(.*?)^```\s*$", re.M | re.S)
FILE_MARK: Final = re.compile(r"^(?:#|//)\s*file:\s*(\S+)")
EXIT_MARK: Final = re.compile(r"\s#\s*exit status (\d+)\s*$")


@dataclass
class Block:
    info: str
    text: str
    line: int  # of the page, where the block starts (for failure messages)


def blocks_of(markdown: str) -> list[Block]:
    return [
        Block(m.group(1), m.group(2), markdown.count("\n", 0, m.start()) + 1)
        for m in FENCE.finditer(markdown)
    ]


def _pattern(expected: str) -> re.Pattern[str]:
    return re.compile(".*".join(re.escape(part) for part in expected.split("...")))


def output_matches(expected: list[str], actual: list[str]) -> bool:
    """`actual` lines against `expected` lines: `...` alone is any lines, in a line any text."""
    if not expected:
        return not actual
    head, rest = expected[0], expected[1:]
    if head == "...":
        return any(output_matches(rest, actual[i:]) for i in range(len(actual) + 1))
    return (
        bool(actual)
        and _pattern(head).fullmatch(actual[0]) is not None
        and output_matches(rest, actual[1:])
    )


@dataclass
class Background:
    """The page's long-running command: its stdout lines, read as they come."""

    process: subprocess.Popen[str]
    output: LineReader
    seen: int = 0  # lines looked at so far: the next expectation looks after them

    def expect(self, expected: str, where: str) -> None:
        """Wait for a line matching `expected` after the last one matched."""
        pattern = _pattern(expected)

        def match(lines: list[str]) -> int | None:
            for index in range(self.seen, len(lines)):
                if pattern.fullmatch(lines[index]):
                    self.seen = index + 1
                    return index
            self.seen = len(lines)
            return None

        if self.output.wait(match, OUTPUT_WAIT) is None:
            tail = "\n".join(self.output.lines[-30:])
            pytest.fail(f"{where}: never printed {expected!r}; it printed:\n{tail}")

    def close(self) -> None:
        """Once it exited: its reader done, its pipe closed."""
        self.output.close(STOP_WAIT)

    def interrupt(self) -> None:
        self.process.send_signal(signal.SIGINT)

    def stop(self) -> int:
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
        try:
            return self.process.wait(STOP_WAIT)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(STOP_WAIT)
            raise
        finally:
            self.close()


class Reader:
    """Follows a page (`page`, its name in failure messages) in `folder`."""

    def __init__(self, folder: Path, page: str) -> None:
        self.folder = folder
        self.page = page
        self.env = self._environment()
        self.background: Background | None = None
        self.stopped: list[Background] = []

    def _environment(self) -> dict[str, str]:
        bin_dir = self.folder.parent / "bin"
        bin_dir.mkdir()
        script = bin_dir / "lineup"
        script.write_text(f'#!/bin/sh\nexec {sys.executable} -m lineup "$@"\n')
        script.chmod(0o755)
        env = {k: v for k, v in os.environ.items() if not k.startswith("PYTEST_")}
        # `python` is the interpreter itself (its own venv's), not a script that runs it: a
        # sandboxed MCP server may execute that program and no shell (docs/mcp-servers.md).
        interpreter = Path(sys.executable).parent
        env["PATH"] = os.pathsep.join((str(bin_dir), str(interpreter), env.get("PATH", "")))
        # A reader's npm keeps its cache between commands and days; a fresh HOME would send
        # every `npm install` (`pack-mcp --npm`) to the registry for all of it again.
        env.setdefault("npm_config_cache", str(Path.home() / ".npm"))
        env["HOME"] = str(self.folder.parent / "home")
        env["XDG_DATA_HOME"] = str(self.folder.parent / "home" / "data")
        env.pop("LINEUP_LOG", None)
        return env

    def follow(self, block: Block) -> None:
        where = f"{self.page}:{block.line}"
        marked = FILE_MARK.match(block.text)
        if block.info == "console":
            self.console(block.text, where)
        elif block.info == "diff":
            apply_diff(self.folder, block.text, where)
        elif marked:
            path = self.folder / marked.group(1)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(block.text)

    def console(self, text: str, where: str) -> None:
        lines = text.splitlines()
        if lines and not lines[0].startswith("$ "):  # what the background command prints
            while lines and not lines[0].startswith("$ "):
                self.watch(lines.pop(0), where)
        while lines:
            command = lines.pop(0).removeprefix("$ ")
            expected: list[str] = []
            while lines and not lines[0].startswith("$ "):
                expected.append(lines.pop(0))
            if command.rstrip().endswith("&"):
                self.start(command.rstrip().removesuffix("&"), where)
                for line in expected:
                    self.watch(line, where)
            else:
                self.run(command, expected, where)

    def run(self, command: str, expected: list[str], where: str) -> None:
        status = EXIT_MARK.search(command)
        result = subprocess.run(
            ["bash", "-c", command],
            cwd=self.folder,
            env=self.env,
            capture_output=True,
            text=True,
            timeout=COMMAND_TIMEOUT,
            stdin=subprocess.DEVNULL,
            check=False,
        )
        want = int(status.group(1)) if status else 0
        said = f"{where}: $ {command}\nstdout:\n{result.stdout}stderr:\n{result.stderr}"
        assert result.returncode == want, said
        assert output_matches(expected, result.stdout.splitlines()), said

    def start(self, command: str, where: str) -> None:
        assert self.background is None, f"{where}: a second background command"
        process = subprocess.Popen(
            ["bash", "-c", f"exec {command}"],
            cwd=self.folder,
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL,
            text=True,
        )
        assert process.stdout is not None
        self.background = Background(process, LineReader(process.stdout))

    def watch(self, line: str, where: str) -> None:
        assert self.background is not None, f"{where}: no background command runs"
        if line == "^C":
            self.background.interrupt()
        elif line != "...":
            self.background.expect(line, where)
        if line == "lineup: stopped":
            assert self.background.process.wait(STOP_WAIT) == 0, where
            self.background.close()
            self.stopped.append(self.background)
            self.background = None

    def close(self) -> None:
        if self.background is not None:
            self.background.stop()


def apply_diff(folder: Path, text: str, where: str) -> None:
    """Apply a unified diff by its context (line numbers, if any, are not read)."""
    path: Path | None = None
    hunks: list[list[str]] = []
    for line in text.splitlines():
        if line.startswith("--- "):
            continue
        if line.startswith("+++ "):
            if path is not None:
                _apply(path, hunks, where)
            path = folder / line[4:].strip().removeprefix("b/")
            hunks = []
        elif line.startswith("@@"):
            hunks.append([])
        else:
            assert hunks, f"{where}: a diff line before its hunk: {line!r}"
            hunks[-1].append(line)
    assert path is not None, f"{where}: a diff names no file"
    _apply(path, hunks, where)


def _apply(path: Path, hunks: list[list[str]], where: str) -> None:
    content = path.read_text()
    for hunk in hunks:
        old = [line[1:] for line in hunk if line[:1] in (" ", "-") or line == ""]
        new = [line[1:] for line in hunk if line[:1] in (" ", "+") or line == ""]
        before, after = "".join(f"{x}\n" for x in old), "".join(f"{x}\n" for x in new)
        assert content.count(before) == 1, f"{where}: {path.name} has not once:\n{before}"
        content = content.replace(before, after, 1)
    path.write_text(content)


def follow(page: Path, folder: Path) -> Reader:
    """Every block of `page`, in order, in `folder` (which exists, empty); every background
    command stopped at the end, also when a block failed. Returns the reader, to look at."""
    reader = Reader(folder, page.relative_to(ROOT).as_posix())
    try:
        for block in blocks_of(page.read_text()):
            reader.follow(block)
    finally:
        reader.close()
    return reader
