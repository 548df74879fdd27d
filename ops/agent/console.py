"""`lineup agent`: play the Remote Agent by hand, or replay a script of agent moves.

    lineup agent [--data-dir DIR | --appserver URL] [--agent-id ID] [--agent-secret S]
                 [--conversation-id C] [--script FILE] [--timeout S] [--json]

Where the AppServer is: `--appserver URL`; else the embedded AppServer of the `lineup run`
running with `--data-dir DIR` (found through its status, as `lineup status` asks it); without
either, the one of a `lineup run` on the default data dir, else `http://127.0.0.1:8787` (a
`lineup devserver`). The Agent defaults to the embedded one's `demo-agent` / `demo-secret`,
the conversation to the first the login returns; `--timeout 10` (seconds) bounds logging in,
each `wait` step that names no timeout of its own, and the wait for a first inventory.

A background sync loop shows each message the client (the LineUp runtime) sends in the
conversation as it arrives, one readable line each on stdout: its type, the call it is
about, its status or code (`refused tool_input_invalid at /fields/0/max`), a short payload.
`--json` shows the raw JSON instead, one line each. What was there before the console started
is history: counted, not shown (`show` lists it). Everything else goes to stderr.

On a terminal the prompt has line editing, history (`$XDG_STATE_HOME/lineup/agent_history`)
and Tab completion, and messages are written above it. Commands:
    tools [TOOL]                          the inventory: each tool and its input; one tool's
                                          whole input schema
    say <markdown>                        a `lineup.v1.text` (`\\n` in the text is a newline)
    say --app-session <id> <markdown>     a text that is a short result of that open app
                                          sub-session (`app_session_context`), in its group
    call <tool> [<json-input>] [revision] a `lineup.v1.tool.call` (input defaults to {}, the
                                          revision to the latest inventory, waited for)
    dismiss <control_id> <call_id>        a `lineup.v1.interaction.dismiss`
    show [N]                              the last N messages received (default: all)
    help, quit                            (or end of input)

`--script FILE` replays JSON lines instead (blank lines and `#` comments are skipped):
    {"say": "markdown"}
    {"say": {"markdown": ..., "app_session_context": "<app_session_id>"}}
    {"call": {"tool": ..., "input": {...}, "inventory_revision"?: ..., "call_id"?: ...,
              "app_session_context"?: "<app_session_id>"}}   e.g. an `interaction.choice`
    {"dismiss": {"control_id": ..., "call_id": ...}}
    {"wait": {"type": "text", "timeout"?: 10}}   the next message of that type that arrives
                                          after the last say/call/dismiss began (never one
                                          from before); also `client.inventory`,
                                          `app_session.opened|closed`, and, about one call
                                          (`"call_id"`, default the last call), `tool.receipt`,
                                          `tool.progress`, `tool.result`, `tool.error`
    {"expect_text": "substring"}                          in the message the last wait matched

A wait for a call's result fails at once when the call is refused (and a wait for a refusal
when it gets a result); at the end, each call the script made must have been answered, and
not refused unless a wait asked for the refusal.

Exit status: 0 when the script (or session) ends, 1 when a step fails (the message names the
script line and its text: a wait timed out, a call was refused, an expectation failed, the
AppServer refused or is unreachable), 2 for bad usage.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Final

import trio

from lineup.ops.devserver import DEFAULT_AGENT_ID, DEFAULT_AGENT_SECRET

from ._client import UNREACHABLE, AgentClient, AppServerError
from ._render import describe, tool_lines
from ._runtime import RuntimeUnreachable, embedded_appserver_url
from ._session import Inbox, Script, Session, StepFailed
from ._terminal import Terminal
from .demo import DEFAULT_APPSERVER_URL

__all__ = ["Console", "Inbox", "Session", "StepFailed", "main"]

DEFAULT_TIMEOUT_S: Final = 10.0
SYNC_TIMEOUT_MS: Final = 10_000
HISTORY_PAGES: Final = 1000  # pages of history read at the start, at most
EXIT_FAILED: Final = 1
EXIT_USAGE: Final = 2
COMMANDS: Final = ("tools", "say", "call", "dismiss", "show", "help", "quit")
APP_SESSION_FLAG: Final = "--app-session"  # `say --app-session <id> <markdown>`
HELP: Final = (
    "tools [TOOL] | say [--app-session <id>] <markdown> |",
    "call <tool> [<json-input>] [revision] | dismiss <control_id> <call_id> | show [N] |",
    "help | quit",
)


class Console:
    """The session's output: each message one readable line (or its JSON), notes on stderr."""

    def __init__(self, terminal: Terminal, *, as_json: bool = False) -> None:
        self.terminal = terminal
        self.as_json = as_json

    def show(self, message: dict[str, Any]) -> None:
        line = json.dumps(message, sort_keys=True) if self.as_json else describe(message)
        self.terminal.out(line)

    def line(self, text: str) -> None:
        """Output asked for (the `tools` list), on stdout with the messages."""
        self.terminal.out(text)

    def note(self, line: str) -> None:
        self.terminal.note(line)


def _note(text: str) -> None:
    print(f"lineup agent: {text}", file=sys.stderr, flush=True)


async def _read_history(client: AgentClient, inbox: Inbox, conversation_id: str) -> str:
    """Everything the AppServer holds now, as the inbox's history; returns the cursor."""
    cursor = ""
    for _ in range(HISTORY_PAGES):
        messages, next_cursor = await client.sync(cursor, 0)
        for message in messages:
            if message.get("conversation_id") == conversation_id:
                inbox.add(message)
        if not messages or next_cursor == cursor:
            break
        cursor = next_cursor
    inbox.history = len(inbox.messages)
    return cursor


async def _sync_loop(session: Session, client: AgentClient, cursor: str) -> None:
    while True:
        messages, cursor = await client.sync(cursor, SYNC_TIMEOUT_MS)
        for message in messages:
            if message.get("conversation_id") == session.conversation_id:
                session.inbox.add(message)
                if session.output is not None:
                    session.output.show(message)


# -------------------------------------------------------------------------- interactive


def _parse_call(rest: str) -> tuple[str, dict[str, Any], Any]:
    tool, _, raw = rest.partition(" ")
    raw = raw.strip()
    tool_input: Any = {}
    end = 0
    if raw:
        try:
            tool_input, end = json.JSONDecoder().raw_decode(raw)
        except ValueError as exc:
            raise StepFailed("call <tool> [<json-input>] [revision]: input not JSON") from exc
    revision_text = raw[end:].strip()
    revision: Any = None
    if revision_text:
        revision = int(revision_text) if revision_text.isdigit() else revision_text
    return tool, tool_input, revision


async def _command(session: Session, line: str) -> bool:
    """Run one interactive command; False when the session should end."""
    verb, _, rest = line.strip().partition(" ")
    rest = rest.strip()
    out = session.output
    if verb in ("quit", "exit"):
        return False
    if verb == "say" and rest:
        session_id = None
        if rest.startswith(f"{APP_SESSION_FLAG} "):
            session_id, _, rest = rest.removeprefix(APP_SESSION_FLAG).strip().partition(" ")
            rest = rest.strip()
        await session.say(rest.replace("\\n", "\n"), session_id)
    elif verb == "call" and rest:
        await session.call(*_parse_call(rest))
    elif verb == "dismiss" and len(rest.split()) == 2:
        control_id, call_id = rest.split()
        await session.dismiss(control_id, call_id)
    elif verb == "tools" and len(rest.split()) <= 1:
        for text in tool_lines(session.inbox.latest_inventory(), rest or None):
            if out is not None:
                out.line(text)
    elif verb == "show" and (not rest or rest.isdigit()):
        messages = session.inbox.messages
        for message in messages[-int(rest) :] if rest else messages:
            if out is not None:
                out.show(message)
    elif verb and out is not None:
        for text in HELP:
            out.note(f"commands: {text}")
    return True


async def _interactive(session: Session, terminal: Terminal) -> None:
    while True:
        line = await terminal.read_line()
        if line is None:
            return
        try:
            if not await _command(session, line):
                return
        except (StepFailed, AppServerError) as exc:
            terminal.note(f"lineup agent: {exc}")  # a bad command does not end the session


# --------------------------------------------------------------------------------- main


async def _console(
    args: argparse.Namespace,
    appserver: str,
    script: list[str] | None,
    terminal: Terminal,
    words: _Words,
) -> None:
    console = Console(terminal, as_json=args.json)
    async with AgentClient(appserver) as client:
        with trio.fail_after(args.timeout):
            conversations = await client.login(args.agent_id, args.agent_secret)
        conversation_id = args.conversation_id or (conversations[0] if conversations else None)
        if conversation_id is None:
            raise StepFailed("the agent serves no conversation")
        session = Session(client, conversation_id, Inbox(), args.timeout, console)
        words.inbox = session.inbox
        with trio.fail_after(args.timeout):
            cursor = await _read_history(client, session.inbox, conversation_id)
        revision = session.inbox.latest_revision()
        console.note(
            f"lineup agent: {args.agent_id} in {conversation_id} at {appserver}; "
            f"{_count(session.inbox.history, 'earlier message')} (show lists them)"
            + (f"; inventory revision {revision}" if revision is not None else "")
        )
        async with trio.open_nursery() as nursery:
            nursery.start_soon(_sync_loop, session, client, cursor)
            if script is None:
                await _interactive(session, terminal)
            else:
                await Script(session).run(script)
            nursery.cancel_scope.cancel()


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}{'' if n == 1 else 's'}"


class NotFound(Exception):
    """No AppServer to talk to; the message says why."""


def _appserver_url(args: argparse.Namespace) -> str:
    """`--appserver`, else the embedded AppServer of the `lineup run` on the data dir (with no
    `--data-dir` and nothing running on the default one: a devserver's default address)."""
    if args.appserver is not None:
        return str(args.appserver)
    from lineup.sdk.trust import default_data_dir

    try:
        return embedded_appserver_url((args.data_dir or default_data_dir()).absolute())
    except RuntimeUnreachable as exc:
        if args.data_dir is None and not exc.running:
            return DEFAULT_APPSERVER_URL
        raise NotFound(str(exc)) from None


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="lineup agent", description="Play the Remote Agent against an AppServer."
    )
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--appserver", default=None, metavar="URL", help="the AppServer's URL")
    where.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        metavar="DIR",
        help="the embedded AppServer of the `lineup run` on DIR (without either option: the "
        "default data dir's, else http://127.0.0.1:8787)",
    )
    parser.add_argument("--agent-id", default=DEFAULT_AGENT_ID)
    parser.add_argument("--agent-secret", default=DEFAULT_AGENT_SECRET)
    parser.add_argument("--conversation-id", default=None)
    parser.add_argument(
        "--script", type=Path, default=None, metavar="FILE", help="replay these JSON lines"
    )
    parser.add_argument(
        "--timeout",
        type=float,
        default=DEFAULT_TIMEOUT_S,
        metavar="S",
        help="seconds for logging in, a wait step, the first inventory (default: 10)",
    )
    parser.add_argument("--json", action="store_true", help="show each message as raw JSON")
    return parser


def main(argv: list[str] | None = None) -> int:
    """Run `lineup agent` with `argv` (default: `sys.argv[1:]`); returns the exit status."""
    args = _parser().parse_args(argv)
    if args.timeout <= 0:
        _note("--timeout takes a positive number of seconds")
        return EXIT_USAGE
    script: list[str] | None = None
    if args.script is not None:
        try:
            script = args.script.read_text().splitlines()
        except OSError as exc:
            _note(f"cannot read the script ({exc.strerror or type(exc).__name__})")
            return EXIT_FAILED
    try:
        appserver = _appserver_url(args)
    except NotFound as exc:
        _note(str(exc))
        return EXIT_FAILED
    words = _Words()
    try:
        with Terminal(words) as terminal:
            trio.run(_console, args, appserver, script, terminal, words)
    except BaseException as group:
        failure = _unwrap(group)
        if isinstance(failure, StepFailed):
            _note(str(failure))
        elif isinstance(failure, AppServerError) and failure.code == UNREACHABLE:
            _note(f"cannot reach the AppServer at {appserver}")
        elif isinstance(failure, AppServerError):
            _note(f"the AppServer refused: {failure.code}")
        elif isinstance(failure, trio.TooSlowError):
            _note("timed out logging in or reading the conversation")
        elif isinstance(failure, KeyboardInterrupt):
            return 130
        else:
            raise
        return EXIT_FAILED
    return 0


class _Words:
    """Tab's completions: the commands, and the tool names of the latest inventory."""

    def __init__(self) -> None:
        self.inbox: Inbox | None = None

    def __call__(self) -> list[str]:
        return [*COMMANDS, *(self.inbox.tool_names() if self.inbox is not None else ())]


def _unwrap(exc: BaseException) -> BaseException:
    """The one exception inside nested single-member groups (trio's nurseries wrap)."""
    while isinstance(exc, BaseExceptionGroup) and len(exc.exceptions) == 1:
        exc = exc.exceptions[0]
    return exc


if __name__ == "__main__":
    sys.exit(main())
