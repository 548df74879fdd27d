"""The console's session: what the client sent (`Inbox`), the agent's moves (`Session`), and
the script runner with its expectations.

Theory of operation
-------------------
`Inbox` holds every client message of the conversation in arrival order; the messages that
were there before the console started are its history (`history`), kept for `show` and for
the latest inventory. A `wait` matches a message at most once, and only one that arrived
after the script's last move began (`say`, `call`, `dismiss`, or the script's start: its
*mark*): never one from before, so a script cannot "succeed" on history. A wait for a call's
message (`tool.result`, `tool.receipt`, `tool.progress`, `tool.error`) is about one call: the
`call_id` it names, else the script's last call; it fails at once when that call gets the
other ending (a refusal where a result was expected, or the reverse) and says so.

At the end of a script every call it made must have had its first answer (a receipt, or the
refusal), waited for up to the timeout: a refusal no `wait` asked for fails the script, naming
the call's step, as does a call nobody answered. Each failure is a `StepFailed` whose message
names the script line, its text, and what went wrong; the console exits 1 with it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Final, Protocol

import trio

from lineup import wire

from ._render import failure_of, short_type

__all__ = ["CALL_KINDS", "Inbox", "Script", "Session", "StepFailed", "kind_of"]

STEP_TEXT_CHARS: Final = 80  # of a step's text in a failure message
# The messages about one call; the first answer to a call is a receipt or its refusal.
CALL_KINDS: Final = frozenset({wire.RECEIPT, wire.PROGRESS, wire.RESULT, wire.TOOL_ERROR})
KNOWN_KINDS: Final = frozenset(
    {
        *CALL_KINDS,
        wire.TEXT,
        wire.INVENTORY,
        wire.APP_SESSION_OPENED,
        wire.APP_SESSION_CLOSED,
        wire.APP_SESSION_CONTEXT,
    }
)


class StepFailed(Exception):
    """A script step or command failed; the message is the line to print."""


def kind_of(name: str) -> str:
    """A message type as a step may name it: `tool.result` is `lineup.v1.tool.result`."""
    return name if name.startswith("lineup.") else f"lineup.v1.{name}"


def _call_of(message: dict[str, Any]) -> Any:
    payload = message.get("payload")
    return payload.get("call_id") if isinstance(payload, dict) else None


@dataclass
class Inbox:
    """What the client has sent in the conversation, in order, with an arrival signal."""

    messages: list[dict[str, Any]] = field(default_factory=list)
    history: int = 0  # how many of `messages` were there before the console started
    matched: set[int] = field(default_factory=set)  # indexes a `wait` took
    last_matched: dict[str, Any] | None = None
    _arrived: trio.Event = field(default_factory=trio.Event)

    def add(self, message: dict[str, Any]) -> None:
        self.messages.append(message)
        self._arrived.set()
        self._arrived = trio.Event()

    async def next_arrival(self) -> None:
        """Return when the next message arrives."""
        await self._arrived.wait()

    def latest_inventory(self) -> dict[str, Any] | None:
        for message in reversed(self.messages):
            payload = message.get("payload")
            if message.get("type") == wire.INVENTORY and isinstance(payload, dict):
                return payload
        return None

    def latest_revision(self) -> Any:
        inventory = self.latest_inventory()
        return inventory.get("revision") if inventory is not None else None

    def tool_names(self) -> list[str]:
        inventory = self.latest_inventory() or {}
        tools = inventory.get("tools")
        described = [t for t in tools if isinstance(t, dict)] if tools else []
        named = [t.get("id") or t.get("method") for t in described]  # the name to call it by
        return [n for n in named if isinstance(n, str)]

    async def first_revision(self, timeout_s: float) -> Any:
        """The latest inventory's revision, waiting up to `timeout_s` for a first one."""
        with trio.move_on_after(timeout_s):
            while (revision := self.latest_revision()) is None:
                await self._arrived.wait()
            return revision
        raise StepFailed(
            f"no inventory from the client within {timeout_s:g} s (is the runtime connected?): "
            "give the inventory revision"
        )

    async def wait_for(
        self, kind: str, timeout_s: float, *, since: int = 0, call_id: str | None = None
    ) -> dict[str, Any]:
        """The first message of type `kind` (about `call_id`, if given) that arrived at index
        `since` or later and no wait matched yet; `StepFailed` after `timeout_s`, or as soon
        as the call gets the other ending."""
        with trio.move_on_after(timeout_s):
            while True:
                for index in range(max(since, self.history), len(self.messages)):
                    message = self.messages[index]
                    if index in self.matched:
                        continue
                    if call_id is not None and _call_of(message) != call_id:
                        continue
                    if message.get("type") == kind:
                        self.matched.add(index)
                        self.last_matched = message
                        return message
                    if call_id is not None:
                        _check_other_ending(kind, message)
                await self._arrived.wait()
        about = f" of {call_id}" if call_id is not None else ""
        raise StepFailed(f"timed out after {timeout_s:g} s waiting for {short_type(kind)}{about}")


def _check_other_ending(kind: str, message: dict[str, Any]) -> None:
    """`message` is about the awaited call: fail if it ends the call another way."""
    ending = message.get("type")
    payload = message.get("payload")
    if ending == wire.TOOL_ERROR and kind != wire.TOOL_ERROR and isinstance(payload, dict):
        raise StepFailed(f"{failure_of(payload)} where {short_type(kind)} was expected")
    if ending == wire.RESULT and kind == wire.TOOL_ERROR:
        raise StepFailed("the call got its result where a refusal was expected")


class Output(Protocol):
    """Where a session writes: notes about itself, and received messages."""

    def note(self, line: str) -> None: ...

    def show(self, message: dict[str, Any]) -> None: ...

    def line(self, text: str) -> None: ...


class AgentMoves(Protocol):
    """What a session sends (an `AgentClient` does it)."""

    async def say(
        self, conversation_id: str, markdown: str, *, app_session_context: str | None = None
    ) -> dict[str, Any]: ...

    async def call_tool(
        self,
        conversation_id: str,
        tool: str,
        input: dict[str, Any],
        inventory_revision: str | int,
        call_id: str | None = None,
        *,
        app_session_context: str | None = None,
    ) -> dict[str, Any]: ...

    async def dismiss(
        self, conversation_id: str, control_id: str, call_id: str
    ) -> dict[str, Any]: ...


@dataclass
class Session:
    client: AgentMoves
    conversation_id: str
    inbox: Inbox
    timeout_s: float
    output: Output | None = None

    def _note(self, line: str) -> None:
        if self.output is not None:
            self.output.note(f"lineup agent: {line}")

    async def revision(self, given: Any) -> Any:
        return given if given is not None else await self.inbox.first_revision(self.timeout_s)

    async def say(self, markdown: Any, session: Any = None) -> None:
        """Send a text; with `session`, as a short result of that app sub-session."""
        if not isinstance(markdown, str) or not markdown:
            raise StepFailed("say needs a string")
        if session is not None and not isinstance(session, str):
            raise StepFailed("app_session_context is the sub-session's id")
        answer = await self.client.say(self.conversation_id, markdown, app_session_context=session)
        self._note(f"sent text seq={answer.get('seq')}")

    async def call(
        self, tool: Any, tool_input: Any, revision: Any, call_id: Any = None, session: Any = None
    ) -> str:
        """Send a tool call (waiting for a first inventory when no revision is given); returns
        its call id, by default `call-` and 12 random hex digits: short enough to read in a
        line, unique enough for one conversation."""
        if not isinstance(tool, str) or not isinstance(tool_input, dict):
            raise StepFailed("call needs a tool name and a JSON object as input")
        if session is not None and not isinstance(session, str):
            raise StepFailed("app_session_context is the sub-session's id")
        answer = await self.client.call_tool(
            self.conversation_id,
            tool,
            tool_input,
            await self.revision(revision),
            call_id=str(call_id) if call_id is not None else wire.new_message_id("call")[:17],
            app_session_context=session,
        )
        self._note(f"sent tool.call {tool} call_id={answer['call_id']} seq={answer.get('seq')}")
        return str(answer["call_id"])

    async def dismiss(self, control_id: Any, call_id: Any) -> None:
        if not isinstance(control_id, str) or not isinstance(call_id, str):
            raise StepFailed("dismiss needs a control_id and a call_id")
        answer = await self.client.dismiss(self.conversation_id, control_id, call_id)
        self._note(f"sent interaction.dismiss seq={answer.get('seq')}")

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
            raise StepFailed(f"expected text not found in {short_type(matched.get('type'))}")


# ------------------------------------------------------------------------------- script


@dataclass
class _Call:
    """A call the script made: where, and where the inbox stood when it was made."""

    step: str  # "script line N: <text>"
    mark: int


@dataclass
class Script:
    """One run of a script over a session (see the module docstring for the semantics)."""

    session: Session
    mark: int = 0  # the inbox index where the last move began
    calls: dict[str, _Call] = field(default_factory=dict)
    last_call: str | None = None

    async def run(self, lines: list[str]) -> None:
        self.mark = len(self.session.inbox.messages)
        for number, line in enumerate(lines, start=1):
            text = line.strip()
            if not text or text.startswith("#"):
                continue
            where = f"script line {number}: {_cut(text)}"
            try:
                step = json.loads(text)
            except ValueError as exc:
                raise StepFailed(f"{where}: not JSON") from exc
            try:
                await self._step(step, where)
            except StepFailed as exc:
                raise StepFailed(f"{where}: {exc}") from exc
        await self._settle()

    async def _step(self, step: Any, where: str) -> None:
        session = self.session
        if not isinstance(step, dict) or len(step) != 1:
            raise StepFailed("a step is an object with exactly one key")
        ((verb, arg),) = step.items()
        if verb in ("say", "call", "dismiss"):
            self.mark = len(session.inbox.messages)
        if verb == "say" and isinstance(arg, dict):
            await session.say(arg.get("markdown"), arg.get("app_session_context"))
        elif verb == "say":
            if not isinstance(arg, str):
                raise StepFailed("say needs a string")
            await session.say(arg)
        elif verb == "call" and isinstance(arg, dict):
            call_id = await session.call(
                arg.get("tool"),
                arg.get("input", {}),
                arg.get("inventory_revision"),
                arg.get("call_id"),
                arg.get("app_session_context"),
            )
            self.calls[call_id] = _Call(where, self.mark)
            self.last_call = call_id
        elif verb == "dismiss" and isinstance(arg, dict):
            await session.dismiss(arg.get("control_id"), arg.get("call_id"))
        elif verb == "wait" and isinstance(arg, dict) and isinstance(arg.get("type"), str):
            await self._wait(arg)
        elif verb == "expect_text":
            session.expect_text(arg)
        else:
            raise StepFailed(f"unknown or malformed step {verb!r}")

    async def _wait(self, arg: dict[str, Any]) -> None:
        kind = kind_of(arg["type"])
        if kind not in KNOWN_KINDS:
            raise StepFailed(f"no client message is of type {short_type(kind)}")
        timeout = arg.get("timeout", self.session.timeout_s)
        if not isinstance(timeout, int | float) or isinstance(timeout, bool) or timeout < 0:
            raise StepFailed("wait timeout must be a number of seconds")
        call_id = arg.get("call_id")
        if call_id is not None and not isinstance(call_id, str):
            raise StepFailed("wait's call_id is a string")
        since = self.mark
        if kind in CALL_KINDS:
            call_id = call_id or self.last_call
            if call_id is None:
                raise StepFailed(f"{short_type(kind)} of which call? (no call yet: name call_id)")
            made = self.calls.get(call_id)
            since = made.mark if made is not None else self.mark
        await self.session.inbox.wait_for(kind, float(timeout), since=since, call_id=call_id)

    async def _settle(self) -> None:
        """Each call's first answer, up to the timeout: a refusal no wait took fails."""
        inbox = self.session.inbox
        for call_id, made in self.calls.items():
            with trio.move_on_after(self.session.timeout_s) as waited:
                first = await _first_answer(inbox, call_id, made.mark)
            if waited.cancelled_caught:
                raise StepFailed(
                    f"{made.step}: no answer to {call_id} within {self.session.timeout_s:g} s"
                )
            index, message = first
            if message.get("type") == wire.TOOL_ERROR and index not in inbox.matched:
                payload = message.get("payload")
                failure = failure_of(payload) if isinstance(payload, dict) else "refused"
                raise StepFailed(f"{made.step}: {failure}")


async def _first_answer(inbox: Inbox, call_id: str, since: int) -> tuple[int, dict[str, Any]]:
    while True:
        for index in range(since, len(inbox.messages)):
            message = inbox.messages[index]
            first = message.get("type") in (wire.RECEIPT, wire.TOOL_ERROR, wire.RESULT)
            if first and _call_of(message) == call_id:
                return index, message
        await inbox.next_arrival()


def _cut(text: str) -> str:
    return text if len(text) <= STEP_TEXT_CHARS else text[: STEP_TEXT_CHARS - 1] + "…"
