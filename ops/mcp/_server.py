"""`lineup mcp`'s MCP server: the Agent's side of the AppServer, served to an MCP client over
stdio or streamable HTTP on loopback.

Theory of operation
-------------------
`McpBridge.run` logs in to the AppServer as the Agent (an `AgentClient`, the same as any other
Agent program: the runtime never hears of MCP), then keeps one sync loop reading what the
runtime sends the Agent into the `Bridge` (`_bridge`). Each MCP `tools/call` becomes one
`lineup.v1.tool.call` pinned to the inventory revision the bridge holds, its call slot opened
before it is sent; what arrives in the slot becomes MCP progress (receipts, the tool's own
progress, and a keep-alive every `KEEPALIVE_S` while nothing comes) until the one terminal
message, which becomes the MCP result. A refusal for `inventory_revision_mismatch` is retried
once under the new revision when the tool is unchanged in it. A client's cancellation of an
interactive call becomes `lineup.v1.interaction.dismiss`, and the call's slot stays open
(bounded) until its one terminal message, so nothing is left waiting.

A `tools/call` with `task` (the spec's tasks, `_task_server`) is answered at once with the
task, and the same call runs in the bridge's nursery; `tasks/get|result|cancel|list` serve
it. So a call that waits for the user outlives a client whose request timeout does not reset
on progress.

A new inventory revision is `notifications/tools/list_changed` to every connected client; a
new message of the conversation is `notifications/resources/updated` to its subscribers; the
bridge's own warnings (a failed sync, a login again) are MCP log notifications
(`notifications/message`, at or above the level a client set) to every connected client.
Logs name tools and call ids only: never arguments, results, message text or tokens.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

import mcp_types as types
import trio
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel.server import NotificationOptions, Server
from mcp.server.models import InitializationOptions
from mcp.server.session import ServerSession
from mcp.shared.exceptions import MCPError

import lineup
from lineup import wire
from lineup.ops.agent import AgentClient, AppServerError

from ._bridge import (
    CONVERSATION_TOOLS,
    FINALS,
    MESSAGES_URI,
    NEXT_MESSAGE,
    RESOURCE_NOT_FOUND,
    SAY,
    Bridge,
    CallSlot,
    Inventory,
    error_result,
    input_violation,
    mcp_tools,
    progress_line,
    result_of,
)
from ._task_server import TASKS_CAPABILITY, Steps, TaskServer, peer_of

__all__ = ["KEEPALIVE_S", "Link", "McpBridge"]

log = logging.getLogger("lineup.mcp")

KEEPALIVE_S: Final = 10.0  # a progress notification at least this often while a call waits
SYNC_TIMEOUT_MS: Final = 10_000  # one long poll of the AppServer
READY_TIMEOUT_S: Final = 15.0  # for the first inventory, before a tools/list or tools/call
RETRY_WAIT_S: Final = 5.0  # for the newer inventory a revision mismatch announces
DISMISS_WAIT_S: Final = 10.0  # for a dismissed call's terminal message
SYNC_BACKOFF_S: Final = (0.05, 2.0)  # first and longest pause after a failed sync
DEFAULT_WAIT_S: Final = 60.0  # `conversation.next_message` without a timeout
_SAY_TOOL, _NEXT_TOOL = CONVERSATION_TOOLS
MAX_PEERS: Final = 64  # connected clients told of changes (the oldest are forgotten)
LOG_LEVELS: Final[tuple[types.LoggingLevel, ...]] = (
    "debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"
)  # fmt: skip
INSTRUCTIONS: Final = (
    "You are the Agent of a LineUp runtime: its MiniApps' tools and the standard interactions "
    "(interaction.notice|choice|confirm|input) are your tools. conversation.say speaks to the "
    "user; conversation.next_message waits for the user's next message."
)


@dataclass(frozen=True)
class Link:
    """Where the Agent logs in: the AppServer, the Agent's credentials, the conversation (the
    first the login returns when None)."""

    appserver_url: str
    agent_id: str
    agent_secret: str
    conversation_id: str | None = None


class _Server(Server[Any]):
    # Every transport's handshake advertises the tools' list_changed (the streamable HTTP
    # manager asks for the options itself, without arguments).
    def create_initialization_options(
        self,
        notification_options: NotificationOptions | None = None,
        experimental_capabilities: dict[str, dict[str, Any]] | None = None,
        extensions: dict[str, dict[str, Any]] | None = None,
    ) -> InitializationOptions:
        options = super().create_initialization_options(
            notification_options or NotificationOptions(tools_changed=True),
            experimental_capabilities,
            extensions,
        )
        # The spec's tasks (2025-11-25): the SDK has their types, not their capability.
        capabilities = options.capabilities.model_copy(update={"tasks": TASKS_CAPABILITY})
        return options.model_copy(update={"capabilities": capabilities})


class _Progress:
    """The MCP progress of one request: a strictly growing count, a line each."""

    def __init__(self, session: ServerSession) -> None:
        self._session = session
        self._count = 0

    async def step(self, message: str) -> None:
        self._count += 1
        await self._session.report_progress(float(self._count), None, message)


class McpBridge:
    """One `lineup mcp`: `await nursery.start(bridge.run)`, then serve `bridge.server`."""

    def __init__(self, link: Link, client: AgentClient) -> None:
        self.link = link
        self.client = client
        self.bridge = Bridge(conversation_id=link.conversation_id or "")
        self._peers: list[ServerSession] = []  # told of new inventories
        self._subscribers: list[ServerSession] = []  # of the conversation's messages
        self._log_levels: dict[object, types.LoggingLevel] = {}  # a peer's `logging/setLevel`
        self._ready = trio.Event()
        self.tasks = TaskServer(self._call, lambda session: _remember(self._peers, session))
        self.server = _Server(
            "lineup",
            version=lineup.__version__,
            instructions=INSTRUCTIONS,
            on_list_tools=self._list_tools,
            on_call_tool=self._call_tool,
            on_list_resources=self._list_resources,
            on_read_resource=self._read_resource,
            on_subscribe_resource=self._subscribe,
            on_unsubscribe_resource=self._unsubscribe,
        )
        self.server.add_notification_handler(
            "notifications/initialized", types.NotificationParams, self._on_initialized
        )
        # Registered directly: the constructor's `on_set_logging_level` warns (the capability
        # is deprecated in 2026-07-28), yet 2025-11-25 clients get the warnings through it.
        self.server.add_request_handler(
            "logging/setLevel", types.SetLevelRequestParams, self._set_log_level
        )
        self.tasks.install(self.server)

    # ------------------------------------------------------------------------ the Agent

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Log in, then read the runtime's messages until cancelled. Ready once logged in;
        raises `AppServerError` when the first login fails."""
        conversations = await self.client.login(self.link.agent_id, self.link.agent_secret)
        if not self.bridge.conversation_id:
            if not conversations:
                raise AppServerError("no_conversation")
            self.bridge.conversation_id = conversations[0]
        async with trio.open_nursery() as nursery:
            self.tasks.nursery = nursery  # runs the tasks' calls
            task_status.started()
            await self._sync_loop()

    async def _sync_loop(self) -> None:
        cursor, failures = "", 0
        while True:
            timeout_ms = SYNC_TIMEOUT_MS if self.bridge.caught_up else 0
            try:
                messages, next_cursor = await self.client.sync(cursor, timeout_ms)
            except AppServerError as exc:
                failures += 1
                log.info("mcp.sync_failed code=%s failures=%d", exc.code, failures)
                if failures & (failures - 1) == 0:  # the 1st, 2nd, 4th, 8th…: bounded
                    await self.warn("mcp.sync_failed", code=exc.code, failures=failures)
                if exc.status == 401:
                    await self._login_again()
                first, cap = SYNC_BACKOFF_S
                await trio.sleep(min(cap, first * 2.0 ** min(failures, 10)))
                continue
            failures = 0
            for message in messages:
                taken = self.bridge.take(message)
                if taken == "inventory":
                    log.info("mcp.inventory revision=%s", self.bridge.inventory.revision)  # type: ignore[union-attr]
                    await self._tell(self._peers, lambda s: s.send_tool_list_changed())
                elif taken == "text":
                    await self._tell(
                        self._subscribers, lambda s: s.send_resource_updated(MESSAGES_URI)
                    )
            if not messages and not self.bridge.caught_up:
                self.bridge.caught_up = True
                self._ready.set()
            cursor = next_cursor

    async def _login_again(self) -> None:
        try:
            await self.client.login(self.link.agent_id, self.link.agent_secret)
        except AppServerError as exc:
            log.info("mcp.login_failed code=%s", exc.code)
            await self.warn("mcp.login_failed", code=exc.code)
            return
        log.info("mcp.logged_in_again")
        await self.warn("mcp.logged_in_again")

    async def warn(self, event: str, **fields: str | int) -> None:
        """Tell every connected client one of the bridge's own warnings, as an MCP log
        notification: an event name and codes, never content."""
        notification = types.LoggingMessageNotification(
            params=types.LoggingMessageNotificationParams(
                level="warning", logger="lineup.mcp", data={"event": event, **fields}
            )
        )
        heard = [
            s
            for s in self._peers
            if _at_least("warning", self._log_levels.get(peer_of(s), "debug"))
        ]
        await self._tell(heard, lambda s: s.send_notification(notification))

    async def _tell(
        self, sessions: list[ServerSession], send: Callable[[ServerSession], Any]
    ) -> None:
        for session in list(sessions):
            try:
                with trio.move_on_after(1.0):
                    await send(session)
            except Exception as exc:  # a client gone: it is forgotten
                log.info("mcp.peer_gone error=%s", type(exc).__name__)
                if session in sessions:
                    sessions.remove(session)

    async def _current(self) -> Inventory:
        with trio.fail_after(READY_TIMEOUT_S):
            await self._ready.wait()
            return await self.bridge.inventory_other_than(None)

    # ------------------------------------------------------------------------ MCP handlers

    async def _on_initialized(
        self, ctx: ServerRequestContext[Any, Any], params: types.NotificationParams
    ) -> None:
        _remember(self._peers, ctx.session)

    async def _list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        _remember(self._peers, ctx.session)
        try:
            inventory: Inventory | None = await self._current()
        except trio.TooSlowError:
            inventory = None
        return types.ListToolsResult(tools=mcp_tools(inventory))

    async def _call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult:
        _remember(self._peers, ctx.session)
        progress = _Progress(ctx.session)
        return await self._call(params.name, dict(params.arguments or {}), progress)

    async def _call(
        self, name: str, arguments: dict[str, Any], progress: Steps
    ) -> types.CallToolResult:
        """One tool call, whether a plain `tools/call` or a task's: its MCP result."""
        try:
            if name == SAY:
                return await self._say(arguments)
            if name == NEXT_MESSAGE:
                return await self._next_message(arguments, progress)
            inventory = await self._current()
            for attempt in range(2):
                final = await self._one_call(name, arguments, inventory, progress)
                code = (final.get("payload") or {}).get("code")
                if code == "inventory_revision_mismatch" and attempt == 0:
                    newer = None
                    with trio.move_on_after(RETRY_WAIT_S):
                        newer = await self.bridge.inventory_other_than(inventory.revision)
                    if newer is not None and newer.unchanged(inventory, name):
                        log.info("mcp.call_retried tool=%s revision=%s", name, newer.revision)
                        inventory = newer
                        continue
                return result_of(final)
        except AppServerError as exc:
            return error_result(exc.code)
        except trio.TooSlowError:
            return error_result("inventory_unavailable")
        raise AssertionError("unreachable")  # pragma: no cover

    async def _one_call(
        self, tool: str, arguments: dict[str, Any], inventory: Inventory, progress: Steps
    ) -> dict[str, Any]:
        """Send one tool call pinned to `inventory`; its terminal message."""
        call_id = wire.new_message_id("mcp")
        interactive = (inventory.tools.get(tool) or {}).get("handling") == "interactive"
        with self.bridge.calls.open(call_id) as slot:
            log.info("mcp.call tool=%s call_id=%s", tool, call_id)
            try:
                await self.client.call_tool(
                    self.bridge.conversation_id, tool, arguments, inventory.revision, call_id
                )
                return await _follow(slot, progress)
            except trio.Cancelled:
                if interactive:
                    await self._dismiss(call_id, slot)
                raise

    async def _dismiss(self, call_id: str, slot: CallSlot) -> None:
        """The client gave up an interactive call: the question is dismissed, and its one
        terminal message is awaited (bounded), so it never reaches a later reader."""
        with trio.CancelScope(shield=True), trio.move_on_after(DISMISS_WAIT_S):
            try:
                await self.client.dismiss(self.bridge.conversation_id, f"ctl-{call_id}", call_id)
            except AppServerError as exc:
                log.info("mcp.dismiss_failed call_id=%s code=%s", call_id, exc.code)
                return
            log.info("mcp.dismissed call_id=%s", call_id)
            while (await slot.next()).get("type") not in FINALS:
                pass

    async def _say(self, arguments: dict[str, Any]) -> types.CallToolResult:
        refused = input_violation(_SAY_TOOL, arguments)
        if refused is not None:
            return refused
        markdown, session = str(arguments["markdown"]), arguments.get("app_session_id")
        answer = await self.client.say(
            self.bridge.conversation_id, markdown, app_session_context=session
        )
        message_id = str(answer.get("message_id", ""))
        self.bridge.conversation.add(
            {
                "message_id": message_id,
                "from": "agent",
                "markdown": markdown,
                "timestamp": wire.utc_timestamp(),
            },
            unread=False,
        )
        await self._tell(self._subscribers, lambda s: s.send_resource_updated(MESSAGES_URI))
        content = {"message_id": message_id}
        return types.CallToolResult(
            content=[types.TextContent(text="said")], structured_content=content
        )

    async def _next_message(
        self, arguments: dict[str, Any], progress: Steps
    ) -> types.CallToolResult:
        refused = input_violation(_NEXT_TOOL, arguments)
        if refused is not None:
            return refused
        timeout = float(arguments.get("timeout_s", DEFAULT_WAIT_S))
        conversation = self.bridge.conversation
        with trio.move_on_after(timeout):
            await self._current()
            while not conversation.unread:
                with trio.move_on_after(KEEPALIVE_S) as idle:
                    await conversation.changed.wait()
                if idle.cancelled_caught:
                    await progress.step("waiting for the user")
        if not conversation.unread:
            return types.CallToolResult(
                content=[types.TextContent(text="no message")],
                structured_content={"timed_out": True},
            )
        entry = conversation.unread.popleft()
        found = {
            "timed_out": False,
            **{k: entry[k] for k in ("message_id", "markdown", "timestamp")},
        }
        return types.CallToolResult(
            content=[types.TextContent(text=entry["markdown"])], structured_content=found
        )

    async def _list_resources(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        return types.ListResourcesResult(
            resources=[
                types.Resource(
                    uri=MESSAGES_URI,
                    name="conversation",
                    description="The conversation's newest messages (JSON); subscribe for updates.",
                    mime_type="application/json",
                )
            ]
        )

    async def _read_resource(
        self, ctx: ServerRequestContext[Any, Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        if str(params.uri) != MESSAGES_URI:
            # The spec's answer, and no handler failure: nothing is logged.
            raise MCPError(RESOURCE_NOT_FOUND, "Resource not found", {"uri": str(params.uri)})
        return types.ReadResourceResult(
            contents=[
                types.TextResourceContents(
                    uri=MESSAGES_URI,
                    mime_type="application/json",
                    text=self.bridge.conversation.document(),
                )
            ]
        )

    async def _subscribe(
        self, ctx: ServerRequestContext[Any, Any], params: types.SubscribeRequestParams
    ) -> types.EmptyResult:
        if str(params.uri) == MESSAGES_URI:
            _remember(self._subscribers, ctx.session)
        return types.EmptyResult()

    async def _unsubscribe(
        self, ctx: ServerRequestContext[Any, Any], params: types.UnsubscribeRequestParams
    ) -> types.EmptyResult:
        self._subscribers[:] = [s for s in self._subscribers if not _samepeer_of(s, ctx.session)]
        return types.EmptyResult()

    async def _set_log_level(
        self, ctx: ServerRequestContext[Any, Any], params: types.SetLevelRequestParams
    ) -> types.EmptyResult:
        _remember(self._peers, ctx.session)
        self._log_levels[peer_of(ctx.session)] = params.level
        return types.EmptyResult()


async def _follow(slot: CallSlot, progress: Steps) -> dict[str, Any]:
    """Forward a call's steps as progress (a keep-alive while none comes) until its terminal
    message, which is returned."""
    while True:
        with trio.move_on_after(KEEPALIVE_S) as idle:
            message = await slot.next()
        if idle.cancelled_caught:
            await progress.step("waiting")
            continue
        if message.get("type") in FINALS:
            return message
        await progress.step(progress_line(message))


def _samepeer_of(a: ServerSession, b: ServerSession) -> bool:
    return peer_of(a) is peer_of(b)


def _at_least(level: types.LoggingLevel, minimum: types.LoggingLevel) -> bool:
    return LOG_LEVELS.index(level) >= LOG_LEVELS.index(minimum)


def _remember(sessions: list[ServerSession], session: ServerSession) -> None:
    if any(_samepeer_of(s, session) for s in sessions):
        return
    sessions.append(session)
    del sessions[:-MAX_PEERS]
