"""The console's terminal: plain lines off a terminal, and on a real pseudo-terminal a readline
prompt with line editing and history, and messages written above what is being typed."""

from __future__ import annotations

import io
import os
import pty
import sys
from pathlib import Path

import pytest
import trio

from lineup.ops.agent._terminal import PROMPT, Terminal, history_path
from lineup.tests.ops._devserver import Api, RunningServer, envelope

WAIT = 30.0  # a child interpreter's start-up included
UP = "\x1b[A"


async def test_off_a_terminal_lines_are_read_plainly_and_written_as_they_come() -> None:
    out, err = io.StringIO(), io.StringIO()
    with Terminal(stdin=io.StringIO("say a\ntools\n"), stdout=out, stderr=err) as terminal:
        assert not terminal.tty
        assert [await terminal.read_line() for _ in range(3)] == ["say a", "tools", None]
        terminal.out("a message")
        terminal.note("a note")
    assert (out.getvalue(), err.getvalue()) == ("a message\n", "a note\n")


def test_the_history_lives_in_the_users_state_dir(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    assert history_path() == tmp_path / "lineup" / "agent_history"
    monkeypatch.delenv("XDG_STATE_HOME")
    assert history_path() == Path.home() / ".local" / "state" / "lineup" / "agent_history"


class Screen:
    """The master side of a pseudo-terminal: what the console wrote, and the keys to send."""

    def __init__(self, fd: int) -> None:
        self.stream = trio.lowlevel.FdStream(fd)
        self.text = ""

    async def type(self, keys: str) -> None:
        await self.stream.send_all(keys.encode())

    async def shows(self, needle: str, start: int = 0) -> int:
        """The offset just past `needle`, once the console has written it after `start`."""
        with trio.fail_after(WAIT):
            while (found := self.text.find(needle, start)) < 0:
                chunk = await self.stream.receive_some(4096)
                if not chunk:
                    raise AssertionError(f"the console ended without writing {needle!r}")
                self.text += chunk.decode(errors="replace")
        return found + len(needle)


async def _user_texts(api: Api, token: str, count: int) -> list[str]:
    texts: list[str] = []
    cursor = ""
    with trio.fail_after(WAIT):
        while len(texts) < count:
            page = (await api.sync("/v1/sync", token, cursor=cursor, timeout_ms=2_000)).json()
            texts += [m["payload"]["markdown"] for m in page["messages"]]
            cursor = page["cursor"]
    return texts


async def test_on_a_terminal_lines_edit_history_recalls_and_messages_land_above_the_prompt(
    server: RunningServer, api: Api, tmp_path: Path
) -> None:
    master, slave = pty.openpty()
    command = [sys.executable, "-m", "lineup.ops.agent.console", "--appserver", server.url]
    command += ["--agent-id", "agent-1", "--agent-secret", "secret-1", "--conversation-id"]
    env = dict(os.environ, XDG_STATE_HOME=str(tmp_path), TERM="xterm")
    process = await trio.lowlevel.open_process(
        [*command, "conv-a"], stdin=slave, stdout=slave, stderr=slave, env=env
    )
    os.close(slave)
    screen = Screen(master)
    alice = await api.user_token("alice")
    try:
        at = await screen.shows(PROMPT)
        await screen.type("say one\r")
        assert await _user_texts(api, alice, 1) == ["one"]

        # Half a command typed, then a message arrives: it is written above, the typing kept.
        at = await screen.shows(PROMPT, at)
        await screen.type("say tw")
        await screen.shows("say tw", at)
        await api.post("/v1/messages", alice, envelope("conv-a", payload={"markdown": "ping"}), "1")
        at = await screen.shows('text               "ping"', at)
        at = await screen.shows(f"\n{PROMPT}say tw", at)
        await screen.type("o\r")
        # Up twice is the line before last, edited by readline (Ctrl-A: start of the line).
        await screen.type(f"{UP}{UP}\x01\x0b" + "say three\r")
        await screen.type(f"{UP}{UP}{UP}\r")  # `say one` again
        assert await _user_texts(api, alice, 4) == ["one", "two", "three", "one"]
        await screen.type("tools\r")
        await screen.shows("no inventory received yet", at)
        await screen.type("quit\r")
        with trio.fail_after(WAIT):
            assert await process.wait() == 0
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
        await screen.stream.aclose()
    history = (tmp_path / "lineup" / "agent_history").read_text().splitlines()
    assert history[-6:] == ["say one", "say two", "say three", "say one", "tools", "quit"]
