"""`lineup agent`: play the Remote Agent by hand, or replay a script of agent moves.

    lineup agent [--appserver URL] [--agent-id ID] [--agent-secret S]
                 [--conversation-id C] [--script FILE] [--timeout S]

Defaults: `--appserver http://127.0.0.1:8787`, the devserver's `demo-agent` / `demo-secret`,
the first conversation the login returns, `--timeout 10` (seconds: logging in, and each `wait`
step that names no timeout of its own).

A background sync loop prints every message the client (the LineUp runtime) sends in the
conversation, as it arrives, on stdout as one JSON line each, from the start of the
conversation. Everything else (what was sent, errors) goes to stderr.

Interactive commands:
    say <markdown>                        a `lineup.v1.text` (`\\n` in the text is a newline)
    call <tool> <json-input> [revision]   a `lineup.v1.tool.call` (revision defaults to the
                                          last `lineup.v1.client.inventory` received)
    dismiss <control_id> <call_id>        a `lineup.v1.interaction.dismiss`
    show                                  print what the client has sent so far
    quit                                  (or end of input)

`--script FILE` replays JSON lines instead (blank lines and `#` comments are skipped):
    {"say": "markdown"}
    {"call": {"tool": ..., "input": {...}, "inventory_revision": ..., "call_id"?: ...,
              "app_session_context"?: "<app_session_id>"}}   e.g. an `interaction.choice`
    {"dismiss": {"control_id": ..., "call_id": ...}}
    {"wait": {"type": "lineup.v1.text", "timeout": 10}}   the next client message of that type
                                          (also `lineup.v1.tool.result`, `…tool.error`,
                                          `lineup.v1.app_session.opened|closed`)
    {"expect_text": "substring"}                          in the message the last wait matched

Exit status: 0 when the script (or session) ends, 1 when a step fails (a wait timed out, an
expectation failed, the AppServer refused or is unreachable), 2 for bad usage.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import trio

from lineup.ops.devserver import DEFAULT_AGENT_ID, DEFAULT_AGENT_SECRET

from ._client import UNREACHABLE, AgentClient, AppServerError
from .demo import DEFAULT_APPSERVER_URL

__all__ = ["main"]

DEFAULT_TIMEOUT_S: Final = 10.0
SYNC_TIMEOUT_MS: Final = 10_000
INVENTORY: Final = "lineup.v1.client.inventory"
EXIT_FAILED: Final = 1


class StepFailed(Exception):
    """A script step or command failed; the message is the line to print."""


@dataclass
class Inbox:
    """What the client has sent in the conversation, in order, with an arrival signal."""

    messages: list[dict[str, Any]] = field(default_factory=list)
    consumed: int = 0  # messages before this index were skipped or matched by a `wait`
    last_matched: dict[str, Any] | None = None
    _arrived: trio.Event = field(default_factory=trio.Event)

    def add(self, message: dict[str, Any]) -> None:
        self.messages.append(message)
        self._arrived.set()
        self._arrived = trio.Event()

    def latest_revision(self) -> Any:
        for message in reversed(self.messages):
            payload = message.get("payload")
            if message.get("type") == INVENTORY and isinstance(payload, dict):
                return payload.get("revision")
        return None

    async def wait_for(self, kind: str, timeout_s: float) -> dict[str, Any]:
        """The next message of type `kind` not yet matched; `StepFailed` after `timeout_s`."""
        with trio.move_on_after(timeout_s):
            while True:
                for index in range(self.consumed, len(self.messages)):
                    if self.messages[index].get("type") == kind:
                        self.consumed = index + 1
                        self.last_matched = self.messages[index]
                        return self.messages[index]
                await self._arrived.wait()
        raise StepFailed(f"timed out after {timeout_s:g} s waiting for {kind}")


def _emit(message: dict[str, Any]) -> None:
    print(json.dumps(message, sort_keys=True), flush=True)


def _note(text: str) -> None:
    print(f"lineup agent: {text}", file=sys.stderr, flush=True)


async def _sync_loop(client: AgentClient, inbox: Inbox, conversation_id: str) -> None:
    cursor = ""
    while True:
        messages, cursor = await client.sync(cursor, SYNC_TIMEOUT_MS)
        for message in messages:
            if message.get("conversation_id") == conversation_id:
                inbox.add(message)
                _emit(message)


@dataclass
class Session:
    client: AgentClient
    conversation_id: str
    inbox: Inbox
    timeout_s: float

    def _revision(self, given: Any) -> Any:
        revision = given if given is not None else self.inbox.latest_revision()
        if revision is None:
            raise StepFailed("no inventory received yet: give the inventory revision")
        return revision

    async def say(self, markdown: str) -> None:
        answer = await self.client.say(self.conversation_id, markdown)
        _note(f"sent lineup.v1.text seq={answer.get('seq')}")

    async def call(
        self, tool: Any, tool_input: Any, revision: Any, call_id: Any = None, session: Any = None
    ) -> None:
        if not isinstance(tool, str) or not isinstance(tool_input, dict):
            raise StepFailed("call needs a tool name and a JSON object as input")
        if session is not None and not isinstance(session, str):
            raise StepFailed("app_session_context is the sub-session's id")
        answer = await self.client.call_tool(
            self.conversation_id,
            tool,
            tool_input,
            self._revision(revision),
            call_id=str(call_id) if call_id is not None else None,
            app_session_context=session,
        )
        _note(f"sent lineup.v1.tool.call seq={answer.get('seq')} call_id={answer['call_id']}")

    async def dismiss(self, control_id: Any, call_id: Any) -> None:
        if not isinstance(control_id, str) or not isinstance(call_id, str):
            raise StepFailed("dismiss needs a control_id and a call_id")
        answer = await self.client.dismiss(self.conversation_id, control_id, call_id)
        _note(f"sent lineup.v1.interaction.dismiss seq={answer.get('seq')}")

    def expect_text(self, needle: Any) -> None:
        matched = self.inbox.last_matched
        if not isinstance(needle, str):
            raise StepFailed("expect_text needs a string")
        if matched is None:
            raise StepFailed("expect_text before any wait")
        payload = matched.get("payload")
        markdown = payload.get("markdown") if isinstance(payload, dict) else None
        haystack = markdown if isinstance(markdown, str) else json.dumps(payload)
        if needle not in haystack:
            raise StepFailed(f"expected text not found in {matched.get('type')}")


# ------------------------------------------------------------------------------- script


async def _run_step(session: Session, step: Any) -> None:
    if not isinstance(step, dict) or len(step) != 1:
        raise StepFailed("a step is an object with exactly one key")
    ((verb, arg),) = step.items()
    if verb == "say":
        if not isinstance(arg, str):
            raise StepFailed("say needs a string")
        await session.say(arg)
    elif verb == "call" and isinstance(arg, dict):
        await session.call(
            arg.get("tool"),
            arg.get("input", {}),
            arg.get("inventory_revision"),
            arg.get("call_id"),
            arg.get("app_session_context"),
        )
    elif verb == "dismiss" and isinstance(arg, dict):
        await session.dismiss(arg.get("control_id"), arg.get("call_id"))
    elif verb == "wait" and isinstance(arg, dict) and isinstance(arg.get("type"), str):
        timeout = arg.get("timeout", session.timeout_s)
        if not isinstance(timeout, int | float) or timeout < 0:
            raise StepFailed("wait timeout must be a number of seconds")
        await session.inbox.wait_for(arg["type"], float(timeout))
    elif verb == "expect_text":
        session.expect_text(arg)
    else:
        raise StepFailed(f"unknown or malformed step {verb!r}")


async def _run_script(session: Session, lines: list[str]) -> None:
    for number, line in enumerate(lines, start=1):
        text = line.strip()
        if not text or text.startswith("#"):
            continue
        try:
            step = json.loads(text)
        except ValueError as exc:
            raise StepFailed(f"script line {number}: not JSON") from exc
        try:
            await _run_step(session, step)
        except StepFailed as exc:
            raise StepFailed(f"script line {number}: {exc}") from exc


# -------------------------------------------------------------------------- interactive


async def _command(session: Session, line: str) -> bool:
    """Run one interactive command; False when the session should end."""
    verb, _, rest = line.strip().partition(" ")
    rest = rest.strip()
    if verb in ("quit", "exit"):
        return False
    if verb == "say" and rest:
        await session.say(rest.replace("\\n", "\n"))
    elif verb == "call" and rest:
        tool, _, raw = rest.partition(" ")
        try:
            tool_input, end = json.JSONDecoder().raw_decode(raw.strip())
        except ValueError as exc:
            raise StepFailed("call <tool> <json-input> [revision]") from exc
        revision_text = raw.strip()[end:].strip()
        revision: Any = None
        if revision_text:
            revision = int(revision_text) if revision_text.isdigit() else revision_text
        await session.call(tool, tool_input, revision)
    elif verb == "dismiss" and len(rest.split()) == 2:
        control_id, call_id = rest.split()
        await session.dismiss(control_id, call_id)
    elif verb == "show":
        for message in session.inbox.messages:
            _emit(message)
    elif verb:
        _note("commands: say <markdown> | call <tool> <json-input> [revision] | ")
        _note("          dismiss <control_id> <call_id> | show | quit")
    return True


async def _interactive(session: Session) -> None:
    prompt = sys.stdin.isatty()
    while True:
        if prompt:
            print("> ", end="", file=sys.stderr, flush=True)
        line = await trio.to_thread.run_sync(sys.stdin.readline, abandon_on_cancel=True)
        if not line:
            return
        try:
            if not await _command(session, line):
                return
        except (StepFailed, AppServerError) as exc:
            _note(str(exc))  # a bad command does not end an interactive session


# --------------------------------------------------------------------------------- main


async def _console(args: argparse.Namespace, script: list[str] | None) -> None:
    async with AgentClient(args.appserver) as client:
        with trio.fail_after(args.timeout):
            conversations = await client.login(args.agent_id, args.agent_secret)
        conversation_id = args.conversation_id or (conversations[0] if conversations else None)
        if conversation_id is None:
            raise StepFailed("the agent serves no conversation")
        _note(f"agent {args.agent_id} in conversation {conversation_id}")
        session = Session(client, conversation_id, Inbox(), args.timeout)
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_sync_loop, client, session.inbox, conversation_id)
            if script is None:
                await _interactive(session)
            else:
                await _run_script(session, script)
            nursery.cancel_scope.cancel()


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lineup agent", description="Play the Remote Agent against an AppServer."
    )
    parser.add_argument("--appserver", default=DEFAULT_APPSERVER_URL, metavar="URL")
    parser.add_argument("--agent-id", default=DEFAULT_AGENT_ID)
    parser.add_argument("--agent-secret", default=DEFAULT_AGENT_SECRET)
    parser.add_argument("--conversation-id", default=None)
    parser.add_argument("--script", type=Path, default=None, metavar="FILE")
    parser.add_argument("--timeout", type=float, default=DEFAULT_TIMEOUT_S, metavar="S")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run `lineup agent` with `argv` (default: `sys.argv[1:]`); returns the exit status."""
    args = _parser().parse_args(argv)
    script: list[str] | None = None
    if args.script is not None:
        try:
            script = args.script.read_text().splitlines()
        except OSError as exc:
            _note(f"cannot read the script ({exc.strerror or type(exc).__name__})")
            return EXIT_FAILED
    try:
        trio.run(_console, args, script)
    except BaseException as group:
        failure = _unwrap(group)
        if isinstance(failure, StepFailed):
            _note(str(failure))
        elif isinstance(failure, AppServerError) and failure.code == UNREACHABLE:
            _note(f"cannot reach the AppServer at {args.appserver}")
        elif isinstance(failure, AppServerError):
            _note(f"the AppServer refused: {failure.code}")
        elif isinstance(failure, trio.TooSlowError):
            _note("timed out logging in")
        elif isinstance(failure, KeyboardInterrupt):
            return 130
        else:
            raise
        return EXIT_FAILED
    return 0


def _unwrap(exc: BaseException) -> BaseException:
    """The one exception inside nested single-member groups (trio's nurseries wrap)."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


if __name__ == "__main__":
    sys.exit(main())
