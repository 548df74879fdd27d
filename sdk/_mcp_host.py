"""The process of an MCP app: LineUp's MCP client in front of the app's MCP server.

Theory of operation
-------------------
`McpAppHost` is a MiniApp's process for the runtime (the SDK host's channels, ACL and tool
protocol: `MiniAppHost`), and an MCP client (the official `mcp` SDK) for its one server, which
it starts over stdio from the manifest's command, in the app's folder, as its child: inside the
same sandbox (profile `mcp`: `lineup.supervisor._sandbox`), which the child inherits. The
server's stderr is the app's stderr, so it lands in the app's log, as does each of its
`notifications/message`.

A call goes through as one `tools/call` (the method mapped back to the server's own name,
`mcp_server.tools_of`): its progress notifications become LineUp progress, the runtime's cancel
cancels the request (the SDK sends `notifications/cancelled`), and the `CallToolResult` becomes
the call's one terminal: its result (`mcp_server.result_of`, checked by the runtime against the
declared output schema), or, with `isError`, the tool error `mcp_tool_error`.

The server is part of the app: when it ends (a crash, a SIGKILL, garbage on stdout), each open
call fails `mcp_server_exited` and this process exits with an error, so that the supervisor
restarts the app (within its intensity limit) and the next call starts a fresh server. Nothing
the server sends can reach another app: it talks only to this process. `sampling/createMessage`
is refused (`mcp_sampling_unsupported`): there is no model on the device. Its
`elicitation/create` is a standard interaction the user answers (`_mcp_elicit`).
Its UI's own `tools/call` (focus's `miniapp.ui.tool_call`, a tool focus checked the page may
call, app-only ones included) is the server's `tools/call` of that tool, by its own name; its
outcome goes back to focus as a Python app's does (`focus.sdk.surface.tool_done`: the result
mapped by `result_of`, or a code), its progress likewise, within UI_TOOL_CALL_TIMEOUT_S.
Its UI's `resources/read` of a resource that is not one of the app's UI documents (focus's
`miniapp.ui.resource_read`) is the server's `resources/read`, its contents told to focus
(`focus.sdk.surface.resource_done`) when they are within `MAX_LIVE_RESOURCE_BYTES`: the
server's error answer (an unknown URI) is `resource_not_found`, no answer within
UI_RESOURCE_READ_TIMEOUT_S `deadline_exceeded`. Nothing of the URI or the contents is logged.
On `notifications/tools/list_changed` it lists the tools again and sends them to focus, which
makes them a development app's tools, in a new inventory revision (`focus._dev_reload`).
"""

from __future__ import annotations

import logging
import os
import sys
from typing import Any, Final

import mcp_types as types
import trio
from mcp.client.session import ClientRequestContext, ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage

from lineup.actors.kernel import Envelope, ErrorCode, LineUpError, Message, handles

from . import protocol as p
from ._host import MiniAppHost
from ._mcp_elicit import Elicitations, LineUpClientSession
from ._mcp_proxy import McpProxy, proxy_env
from .mcp_apps import UI_RESOURCE_READ_TIMEOUT_S, UI_TOOL_CALL_TIMEOUT_S, live_contents_refusal
from .mcp_network import PROXY_FD_ENV
from .mcp_server import McpTools, error_text_of, result_of, tools_of

__all__ = ["McpAppHost", "list_tools"]

log = logging.getLogger("lineup.sdk.mcp")

START_TIMEOUT: Final = 30.0  # the server's `initialize` and first `tools/list`
CALL_READ_TIMEOUT: Final = 24 * 60 * 60.0  # the runtime's deadline ends a call, not this
_READ_QUEUE: Final = 64


class ServerGone(Exception):
    """The MCP server ended (or broke its stdio): the app's process ends with it."""


class McpAppHost(MiniAppHost):
    """The process of one MCP app. Config: `{"mcp": {"command": [...], "folder": str},
    "instance_id": str}` (the supervisor sets the command's program, `_miniapps`)."""

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        server = self.ctx.config["mcp"]
        command = [str(part) for part in server["command"]]
        self._scope = self.ctx.identity.name.removeprefix("miniapp:")
        self._running: dict[str, trio.CancelScope] = {}
        self._gone = trio.Event()
        self._listening = False  # the server's notifications are acted on once it is listed
        self._relisting = trio.Lock()
        env = dict(server.get("env") or {})  # an imported server's secrets, for it alone
        self._proxy = self._network_proxy(env)
        instance_id = str(self.ctx.config.get("instance_id", self._scope))
        self._elicit = Elicitations(self, self._scope, instance_id)
        params = StdioServerParameters(
            command=command[0], args=command[1:], cwd=server.get("folder") or None, env=env or None
        )
        async with (
            stdio_client(params, errlog=sys.stderr) as (read, write),
            trio.open_nursery() as nursery,
        ):
            # The SDK's reader ends quietly at EOF: a relay tells us when the server is gone.
            relay_in, relay_out = trio.open_memory_channel[SessionMessage | Exception](_READ_QUEUE)
            nursery.start_soon(self._relay, read, relay_in)
            if self._proxy is not None:
                nursery.start_soon(self._proxy.run)
            async with LineUpClientSession(
                relay_out,
                write,
                sampling_callback=_refuse_sampling,
                elicitation_callback=self._elicit,
                logging_callback=self._server_log,
                message_handler=self._on_message,
            ) as session:
                self._session = session
                with trio.fail_after(START_TIMEOUT):
                    info = (await session.initialize()).server_info
                    self._elicit.title = info.title or info.name  # its questions' card title
                    self._mcp_tools = await self._list_tools()
                self._nursery = nursery
                self._listening = True
                task_status.started()
                pending = await self.call("router", p.ToolPendingRequest(), p.ToolPendingReply)
                for call in pending.calls:
                    self._start_tool(call)
                await self._gone.wait()
                log.warning("sdk.mcp_server_exited app=%s", self._scope)
                for call_id, scope in list(self._running.items()):
                    scope.cancel()
                    await self._fail_quietly(call_id, ErrorCode.MCP_SERVER_EXITED)
                raise ServerGone(self._scope)

    def _network_proxy(self, env: dict[str, str]) -> McpProxy | None:
        """The proxy to the server's declared hosts, if the sandbox made its socket
        (`lineup.sdk.mcp_network`); its address goes into the server's `env`."""
        where = os.environ.pop(PROXY_FD_ENV, None)
        if not where:
            return None
        fd, port = (int(part) for part in where.split(":"))
        env.update(proxy_env(port))
        instance_id = str(self.ctx.config.get("instance_id", self._scope))
        return McpProxy(self.call, instance_id, fd)

    @handles(p.McpNetDataEvent)
    def on_mcp_net_data(self, msg: p.McpNetDataEvent, env: Envelope) -> None:
        if self._proxy is not None:
            self._proxy.data(msg)

    @handles(p.McpNetClosedEvent)
    def on_mcp_net_closed(self, msg: p.McpNetClosedEvent, env: Envelope) -> None:
        if self._proxy is not None:
            self._proxy.closed(msg)

    async def _relay(
        self,
        read: Any,
        relay: trio.MemorySendChannel[SessionMessage | Exception],
    ) -> None:
        try:
            async with relay:
                async for message in read:
                    if isinstance(message, Exception):
                        log.warning("sdk.mcp_garbage app=%s", self._scope)
                        break  # a server that writes garbage on stdout is broken
                    await relay.send(message)
        finally:
            self._gone.set()

    async def _list_tools(self) -> McpTools:
        tools = tools_of(self._scope, await list_tools(self._session))
        for _name, reason in tools.refused:  # the server's tool names stay out of our log
            log.warning("sdk.mcp_tool_left_out app=%s reason=%s", self._scope, reason)
        return tools

    async def _server_log(self, params: types.LoggingMessageNotificationParams) -> None:
        # The app's own log (its stderr, `lineup logs`), like anything else the server writes.
        where = f" {params.logger}" if params.logger else ""
        print(f"mcp {params.level}{where}: {params.data}", file=sys.stderr, flush=True)

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification) and self._listening:
            self._nursery.start_soon(self._tools_changed)

    async def _tools_changed(self) -> None:
        """List the tools again and tell focus, one listing at a time: the last one wins."""
        async with self._relisting:
            try:
                with trio.fail_after(START_TIMEOUT):
                    listed = await list_tools(self._session)
                    self._mcp_tools = tools_of(self._scope, listed)
                    changed = p.McpToolsChangedRequest(tools=tuple(listed))
                    await self.call("focus", changed, p.McpToolsChangedReply)
            except LineUpError as exc:
                log.info("sdk.mcp_tools_unpublished app=%s code=%s", self._scope, exc.code.value)
            except Exception as exc:  # the server's answer, not ours
                error = type(exc).__name__
                log.warning("sdk.mcp_tools_not_listed app=%s error=%s", self._scope, error)

    # ------------------------------------------------------------------ tools

    def _start_tool(self, event: p.ToolCallEvent) -> None:
        if event.call_id not in self._running:
            self._running[event.call_id] = trio.CancelScope()
            self._nursery.start_soon(self._run_tool, event)

    async def _run_tool(self, event: p.ToolCallEvent) -> None:
        call_id = event.call_id
        try:
            with self._running[call_id]:
                await self.call("router", p.ToolAcceptRequest(call_id=call_id), p.CommandReceipt)
                self._elicit.calls[call_id] = event.instance_id  # what its questions belong to
                name = self._mcp_tools.names.get(event.tool)
                if name is None:
                    await self.fail(call_id, ErrorCode.TOOL_NOT_ADVERTISED.value)
                    return
                result = await self._session.call_tool(
                    name,
                    event.input,
                    read_timeout_seconds=CALL_READ_TIMEOUT,
                    progress_callback=self._progress_of(call_id),
                )
                await self._answer(call_id, event.tool, result)
        except LineUpError as exc:
            log.warning("sdk.tool_refused call=%s code=%s", call_id, exc.code.value)
        except Exception as exc:  # an MCP error answer, a malformed result, a closed stream
            if not self._gone.is_set():  # else `run` fails it, with every other open call
                log.warning("sdk.mcp_call_failed call=%s error=%s", call_id, type(exc).__name__)
                await self._fail_quietly(call_id, ErrorCode.HANDLER_FAILED)
        finally:
            self._running.pop(call_id, None)
            self._elicit.call_ended(call_id)  # its questions still open are withdrawn

    def _progress_of(self, call_id: str) -> Any:
        async def progress(done: float, total: float | None, message: str | None) -> None:
            report = _progress_report(done, total, message)
            try:
                await self.progress(call_id, report)
            except LineUpError as exc:
                log.info("sdk.mcp_progress_refused call=%s code=%s", call_id, exc.code.value)

        return progress

    async def _answer(self, call_id: str, method: str, result: Any) -> None:
        dumped = result.model_dump(mode="json", by_alias=True, exclude_none=True)
        if getattr(result, "is_error", False):
            await self.fail(call_id, ErrorCode.MCP_TOOL_ERROR.value, error_text_of(dumped))
            return
        await self.complete(call_id, result_of(dumped, self._mcp_tools.structured(method)))

    async def _fail_quietly(self, call_id: str, code: ErrorCode) -> None:
        with trio.CancelScope(shield=True), trio.move_on_after(5):
            try:
                await self.fail(call_id, code.value)
            except LineUpError as exc:
                log.info("sdk.tool_refused call=%s code=%s", call_id, exc.code.value)

    @handles(p.ToolCancelledEvent)
    def on_tool_cancelled(self, msg: p.ToolCancelledEvent, env: Envelope) -> None:
        running = self._running.get(msg.call_id)
        if running is not None:
            running.cancel()  # the SDK tells the server: `notifications/cancelled`

    # ------------------------------------------------------------------ its UI's own calls

    @handles(p.UiToolCallEvent)
    def on_ui_tool_call(self, msg: p.UiToolCallEvent, env: Envelope) -> None:
        if self._listening:
            self._nursery.start_soon(self._run_ui_tool, msg)
        else:  # its server is not listed yet: focus answers the page when no outcome comes
            log.info("sdk.mcp_ui_call_dropped call=%s", msg.call_id)

    async def _run_ui_tool(self, msg: p.UiToolCallEvent) -> None:
        """The page's `tools/call`: the server's, its outcome told to focus (the module's
        docstring); `deadline_exceeded` past UI_TOOL_CALL_TIMEOUT_S, `mcp_server_exited` when
        the server ends meanwhile."""
        done = p.UiToolCallDoneRequest(call_id=msg.call_id, code=ErrorCode.DEADLINE_EXCEEDED.value)
        self._elicit.ui_call_started(msg.call_id)  # a question may be this call's
        try:
            name = self._mcp_tools.names.get(msg.tool)
            if name is None:
                done = done.model_copy(update={"code": ErrorCode.TOOL_NOT_ADVERTISED.value})
                return
            with trio.move_on_after(UI_TOOL_CALL_TIMEOUT_S):
                result = await self._session.call_tool(
                    name,
                    msg.input,
                    read_timeout_seconds=UI_TOOL_CALL_TIMEOUT_S,
                    progress_callback=self._ui_progress_of(msg.call_id),
                )
                dumped = result.model_dump(mode="json", by_alias=True, exclude_none=True)
                if result.is_error:
                    done = done.model_copy(update={"code": ErrorCode.MCP_TOOL_ERROR.value})
                else:
                    structured = self._mcp_tools.structured(msg.tool)
                    done = p.UiToolCallDoneRequest(
                        call_id=msg.call_id, result=result_of(dumped, structured)
                    )
        except Exception as exc:  # an MCP error answer, a malformed result, a closed stream
            log.warning("sdk.mcp_ui_call_failed call=%s error=%s", msg.call_id, type(exc).__name__)
            done = done.model_copy(update={"code": ErrorCode.HANDLER_FAILED.value})
        finally:
            self._elicit.ui_call_ended(msg.call_id)
            if self._gone.is_set() and done.result is None:
                done = done.model_copy(update={"code": ErrorCode.MCP_SERVER_EXITED.value})
            await self._tell_focus(done, "sdk.ui_tool_outcome_not_told")

    def _ui_progress_of(self, call_id: str) -> Any:
        async def progress(done: float, total: float | None, message: str | None) -> None:
            report = _progress_report(done, total, message)
            try:
                told = p.UiToolProgressRequest(call_id=call_id, progress=report)
                await self.call("focus", told, p.CommandReceipt)
            except LineUpError as exc:  # the page gets the result all the same
                log.info("sdk.ui_progress_not_sent code=%s", exc.code.value)

        return progress

    @handles(p.UiResourceReadEvent)
    def on_ui_resource_read(self, msg: p.UiResourceReadEvent, env: Envelope) -> None:
        if self._listening:
            self._nursery.start_soon(self._read_resource, msg)
        else:  # as a call: focus answers the page when no outcome comes
            log.info("sdk.mcp_ui_read_dropped read=%s", msg.read_id)

    async def _read_resource(self, msg: p.UiResourceReadEvent) -> None:
        """The page's `resources/read` of its server's resource (the module's docstring)."""
        done = p.UiResourceReadDoneRequest(
            read_id=msg.read_id, code=ErrorCode.DEADLINE_EXCEEDED.value
        )
        try:
            with trio.move_on_after(UI_RESOURCE_READ_TIMEOUT_S):
                result = await self._session.read_resource(msg.uri)
                if not isinstance(result, types.ReadResourceResult):  # it asks for input
                    raise TypeError(type(result).__name__)
                dumped = result.model_dump(mode="json", by_alias=True, exclude_none=True)
                contents = tuple(dumped["contents"])
                refused = live_contents_refusal(contents)
                done = p.UiResourceReadDoneRequest(
                    read_id=msg.read_id, contents=None if refused else contents, code=refused
                )
        except MCPError:  # the server's own answer: no such resource
            done = done.model_copy(update={"code": ErrorCode.RESOURCE_NOT_FOUND.value})
        except Exception as exc:  # a malformed result, a closed stream
            log.warning("sdk.mcp_ui_read_failed read=%s error=%s", msg.read_id, type(exc).__name__)
            done = done.model_copy(update={"code": ErrorCode.HANDLER_FAILED.value})
        finally:
            if self._gone.is_set() and done.contents is None:
                done = done.model_copy(update={"code": ErrorCode.MCP_SERVER_EXITED.value})
            await self._tell_focus(done, "sdk.ui_read_outcome_not_told")

    async def _tell_focus(self, done: Message, not_told: str) -> None:
        """The outcome of a request of the app's page, told to focus even as the app's task is
        cancelled (for at most 5 s); `not_told` is logged, with the code, if focus did not take
        it (it gave up on it, or restarted)."""
        with trio.CancelScope(shield=True), trio.move_on_after(5):
            try:
                await self.call("focus", done, p.CommandReceipt)
            except LineUpError as exc:
                log.info("%s code=%s", not_told, exc.code.value)

    @handles(p.InteractionUpdatedEvent)
    def on_interaction_updated(self, msg: p.InteractionUpdatedEvent, env: Envelope) -> None:
        self._elicit.updated(msg.interaction)  # an elicitation's answer or end (`_mcp_elicit`)

    def _enqueue(self, event: Message) -> None:
        # An MCP server has no hooks for the runtime's events (deliveries, UI, modes): dropped.
        log.debug("sdk.mcp_event_dropped type=%s", event.TYPE)


def _progress_report(done: float, total: float | None, message: str | None) -> dict[str, Any]:
    """An MCP progress notification as LineUp's progress (its message bounded)."""
    report: dict[str, Any] = {"progress": done}
    if total is not None:
        report["total"] = total
    if message:
        report["message"] = message[:200]
    return report


async def list_tools(session: ClientSession) -> list[dict[str, Any]]:
    """Every page of the server's `tools/list`, each tool as on the wire (by alias)."""
    listed: list[dict[str, Any]] = []
    cursor: str | None = None
    while True:
        page = await session.list_tools(
            params=types.PaginatedRequestParams(cursor=cursor) if cursor else None
        )
        listed += [t.model_dump(mode="json", by_alias=True, exclude_none=True) for t in page.tools]
        cursor = page.next_cursor
        if not cursor:
            return listed


async def _refuse_sampling(
    context: ClientRequestContext, params: types.CreateMessageRequestParams
) -> types.ErrorData:
    return types.ErrorData(
        code=types.INVALID_REQUEST, message=ErrorCode.MCP_SAMPLING_UNSUPPORTED.value
    )
