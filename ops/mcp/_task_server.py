"""The spec's tasks (MCP 2025-11-25) served for `lineup mcp`: the MCP side of `_tasks`.

Theory of operation
-------------------
`TaskServer.install` adds one middleware and four request handlers to the MCP server. The
middleware answers a `tools/call` that carries `task` at once with a new task (`working`) and
starts the same call a plain `tools/call` makes (the bridge's `call`) in the bridge's nursery;
the call's progress lines become the task's status message, and its result ends the task.
`tasks/get` answers the task, `tasks/result` waits for its end and answers the call's result
(with the related-task `_meta`), `tasks/cancel` cancels the call (an interactive one is then
dismissed, as when a client cancels a plain call), `tasks/list` lists the requestor's tasks.
An unknown task, another client's, or a cancel of an ended one is `-32602`, as the spec says;
a task asked of `conversation.say` (no `taskSupport`) is `-32601`.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Mapping
from datetime import UTC, datetime
from typing import Any, Final, Protocol

import mcp_types as types
import trio
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp.server.session import ServerSession
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from ._bridge import SAY, error_result
from ._tasks import MAX_TTL_MS, RELATED_TASK, TaskEntry, TaskTable, TaskUnknown

__all__ = ["RESULT_WAIT_S", "TASKS_CAPABILITY", "Steps", "TaskServer", "peer_of"]

log = logging.getLogger("lineup.mcp")

RESULT_WAIT_S: Final = MAX_TTL_MS / 1000  # the longest `tasks/result` waits for a task's end

TASKS_CAPABILITY: Final = types.ServerTasksCapability(
    list=types.TasksListCapability(),
    cancel=types.TasksCancelCapability(),
    requests=types.ServerTasksRequestsCapability(
        tools=types.TasksToolsCapability(call=types.TasksCallCapability())
    ),
)


class Steps(Protocol):
    """Where a call's progress lines go (an MCP progress notification, a task's status)."""

    async def step(self, message: str) -> None: ...


Call = Callable[[str, dict[str, Any], Steps], Awaitable[types.CallToolResult]]


def peer_of(session: ServerSession) -> object:
    """The client behind a `ServerSession` (one is built per request; the connection is the
    peer)."""
    return getattr(session, "_connection", session)


class _TaskSteps:
    """A task's progress: each line is its status message, read by `tasks/get`."""

    def __init__(self, task: TaskEntry) -> None:
        self._task = task

    async def step(self, message: str) -> None:
        self._task.say(message)


class TaskServer:
    """The tasks of one `lineup mcp`: `install` it on the server, set `nursery` once running."""

    def __init__(self, call: Call, remember: Callable[[ServerSession], None]) -> None:
        self._call = call
        self._remember = remember  # a client that asks a task is told of changes too
        self.table = TaskTable()
        self.nursery: trio.Nursery | None = None

    def install(self, server: Server[Any]) -> None:
        for method, params_type, handler in (
            ("tasks/get", types.GetTaskRequestParams, self._get_task),
            ("tasks/result", types.GetTaskPayloadRequestParams, self._task_result),
            ("tasks/cancel", types.CancelTaskRequestParams, self._cancel_task),
            ("tasks/list", types.PaginatedRequestParams, self._list_tasks),
        ):
            server.add_request_handler(method, params_type, handler)  # type: ignore[arg-type]
        server.middleware.append(self._task_augmented)

    async def _task_augmented(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        """Middleware: a `tools/call` with `task` is answered with the task at once, its call
        run in the bridge's nursery; any other request goes on as it came."""
        raw = ctx.params
        if ctx.method != "tools/call" or not isinstance(raw, Mapping) or raw.get("task") is None:
            return await call_next(ctx)
        try:
            params = types.CallToolRequestParams.model_validate(raw, by_name=False)
        except ValidationError:
            raise MCPError(types.INVALID_PARAMS, "Invalid request parameters") from None
        if params.name == SAY or self.nursery is None:  # `taskSupport` absent: forbidden
            raise MCPError(types.METHOD_NOT_FOUND, "This tool does not run as a task", params.name)
        self._remember(ctx.session)
        ttl = params.task.ttl if params.task is not None else None
        try:
            task = self.table.create(peer_of(ctx.session), ttl, datetime.now(UTC))
        except OverflowError:
            raise MCPError(types.INTERNAL_ERROR, "Too many tasks") from None
        log.info("mcp.task tool=%s task_id=%s", params.name, task.task_id)
        self.nursery.start_soon(self._run_task, task, params.name, dict(params.arguments or {}))
        return types.CreateTaskResult(task=task.view())

    async def _run_task(self, task: TaskEntry, name: str, arguments: dict[str, Any]) -> None:
        with task.scope:  # `tasks/cancel` cancels it: an interactive call is dismissed
            try:
                task.end(await self._call(name, arguments, _TaskSteps(task)))
            except Exception as exc:  # one task's failure never ends the bridge
                log.warning("mcp.task_failed task_id=%s error=%s", task.task_id, type(exc).__name__)
                task.end(error_result("internal_error"))
        log.info("mcp.task_ended task_id=%s status=%s", task.task_id, task.status)

    def _task(self, ctx: ServerRequestContext[Any, Any], task_id: str) -> TaskEntry:
        try:
            return self.table.get(peer_of(ctx.session), task_id, datetime.now(UTC))
        except TaskUnknown:
            raise MCPError(
                types.INVALID_PARAMS, "Failed to retrieve task: Task not found"
            ) from None

    async def _get_task(
        self, ctx: ServerRequestContext[Any, Any], params: types.GetTaskRequestParams
    ) -> types.GetTaskResult:
        return types.GetTaskResult(**dict(self._task(ctx, params.task_id).view()))

    async def _task_result(
        self, ctx: ServerRequestContext[Any, Any], params: types.GetTaskPayloadRequestParams
    ) -> types.CallToolResult:
        """The task's call's result once it has ended (waits until then, at most
        `RESULT_WAIT_S`: its call is bounded well within it), with the related-task `_meta`
        the spec asks for."""
        task = self._task(ctx, params.task_id)
        with trio.move_on_after(RESULT_WAIT_S):
            await task.ended.wait()
        if not task.terminal:
            raise MCPError(types.INTERNAL_ERROR, "The task is still running: ask again")
        result = task.result or error_result("task_cancelled")
        meta = {**(result.meta or {}), RELATED_TASK: {"taskId": task.task_id}}
        return result.model_copy(update={"meta": meta})

    async def _cancel_task(
        self, ctx: ServerRequestContext[Any, Any], params: types.CancelTaskRequestParams
    ) -> types.CancelTaskResult:
        task = self._task(ctx, params.task_id)
        try:
            task.cancel()
        except ValueError:
            raise MCPError(types.INVALID_PARAMS, f"The task has ended: {task.status}") from None
        return types.CancelTaskResult(**dict(task.view()))

    async def _list_tasks(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams
    ) -> types.ListTasksResult:
        if params.cursor is not None:  # one page holds them all (`MAX_TASKS`)
            raise MCPError(types.INVALID_PARAMS, "Unknown cursor")
        mine = self.table.of(peer_of(ctx.session), datetime.now(UTC))
        return types.ListTasksResult(tasks=[t.view() for t in mine])
