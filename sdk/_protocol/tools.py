"""Tool calls (seed 003 §3.2): the runtime tells an app of a call for one of its instances;
the app accepts it, reports progress, and completes, fails or cancels it (`lineup.sdk.tools`)."""

from typing import Any, Literal

from pydantic import Field

from lineup.actors.kernel import Message

from .common import Id

__all__ = [
    "McpToolsChangedReply",
    "McpToolsChangedRequest",
    "ToolAcceptRequest",
    "ToolCallEvent",
    "ToolCancelRequest",
    "ToolCancelledEvent",
    "ToolCompleteRequest",
    "ToolFailRequest",
    "ToolPendingReply",
    "ToolPendingRequest",
    "ToolProgressRequest",
    "UiResourceReadDoneRequest",
    "UiResourceReadEvent",
    "UiToolCallDoneRequest",
    "UiToolCallEvent",
    "UiToolProgressRequest",
]


class ToolCallEvent(Message):
    """Runtime → app: a tool call for one of this app's instances (seed 003 §3.2). The input
    was already checked against the tool's input schema; the app completes it through the
    runtime, never by contacting the Agent."""

    type: Literal["miniapp.tool.call"] = "miniapp.tool.call"
    call_id: Id
    tool: Id
    instance_id: Id
    input: dict[str, Any]


class ToolCancelledEvent(Message):
    """Runtime → app: stop working on this call (expired, cancelled, or its app closed)."""

    type: Literal["miniapp.tool.cancelled"] = "miniapp.tool.cancelled"
    call_id: Id
    code: str


class ToolProgressRequest(Message):
    type: Literal["router.sdk.tool.progress"] = "router.sdk.tool.progress"
    call_id: Id
    progress: dict[str, Any]


class ToolCompleteRequest(Message):
    type: Literal["router.sdk.tool.complete"] = "router.sdk.tool.complete"
    call_id: Id
    result: dict[str, Any]


class ToolFailRequest(Message):
    type: Literal["router.sdk.tool.fail"] = "router.sdk.tool.fail"
    call_id: Id
    code: str = Field(min_length=1, max_length=100)
    message: str = Field(default="", max_length=1000)


class ToolCancelRequest(Message):
    """The app ends its own call as cancelled; `reason` is the code the Agent sees."""

    type: Literal["router.sdk.tool.cancel"] = "router.sdk.tool.cancel"
    call_id: Id
    reason: str = Field(min_length=1, max_length=100)


class ToolAcceptRequest(Message):
    """The app takes a call it was told of (pushed, or listed at its start), before it runs
    it: the router moves the call to `running` and answers; a call that is not the app's, or
    is decided already (cancelled, expired, its result submitted), is refused with its code,
    and the app does not run it. This is the one way a call reaches a handler: a call told
    twice is accepted (and run) once by the process that runs it."""

    type: Literal["router.sdk.tool.accept"] = "router.sdk.tool.accept"
    call_id: Id


class ToolPendingRequest(Message):
    """The app's calls handed to it and not decided yet, for it to accept when it starts: the
    ones never accepted, and the ones a previous process of the app accepted and did not
    finish. Read only: listing moves nothing."""

    type: Literal["router.sdk.tool.pending"] = "router.sdk.tool.pending"


class ToolPendingReply(Message):
    type: Literal["router.sdk.tool.pending.reply"] = "router.sdk.tool.pending.reply"
    calls: tuple[ToolCallEvent, ...]


class UiToolCallEvent(Message):
    """Runtime → app: its own Surface calls one of its tools (the MCP Apps `tools/call`, a
    local UI action: never the Agent's, never recorded as the Agent's calls are). Focus checked
    the tool is the app's, callable by its Surface, and the input against its schema; `call_id`
    is the runtime's name for this one call (`ui-…`). Told, never asked: the app answers with
    `UiToolCallDoneRequest` (the runtime never waits on a request to an app, so no two
    processes ask each other around a loop)."""

    type: Literal["miniapp.ui.tool_call"] = "miniapp.ui.tool_call"
    call_id: Id
    tool: Id
    instance_id: Id
    input: dict[str, Any]


class UiToolCallDoneRequest(Message):
    """App → runtime: the outcome of a call its own Surface made (`UiToolCallEvent`): its
    `result` (checked against the output schema again), or the `code` it failed or was
    cancelled with. A second outcome, or one for a call that is over, changes nothing."""

    type: Literal["focus.sdk.surface.tool_done"] = "focus.sdk.surface.tool_done"
    call_id: Id
    result: dict[str, Any] | None = None
    code: str | None = Field(default=None, max_length=100)


class UiToolProgressRequest(Message):
    """App → runtime: progress of a call its own Surface made (`UiToolCallEvent`), for that
    page (`notifications/progress`). A report for a call that is over is dropped."""

    type: Literal["focus.sdk.surface.tool_progress"] = "focus.sdk.surface.tool_progress"
    call_id: Id
    progress: dict[str, Any]


class UiResourceReadEvent(Message):
    """Runtime → an MCP app: its own Surface reads `uri`, a resource of its server that is
    not one of the app's UI documents (MCP `resources/read`). Focus checked the page and the
    app; told, never asked, as `UiToolCallEvent` is: the app answers with
    `UiResourceReadDoneRequest`."""

    type: Literal["miniapp.ui.resource_read"] = "miniapp.ui.resource_read"
    read_id: Id
    instance_id: Id
    uri: str = Field(min_length=1, max_length=2048)


class UiResourceReadDoneRequest(Message):
    """An MCP app → runtime: what its server answered a `UiResourceReadEvent`: the
    `ReadResourceResult`'s `contents` as on the wire (checked again by focus:
    `lineup.sdk.mcp_apps.live_contents_refusal`), or the `code` it failed with. One for a
    read that is over changes nothing."""

    type: Literal["focus.sdk.surface.resource_done"] = "focus.sdk.surface.resource_done"
    read_id: Id
    contents: tuple[dict[str, Any], ...] | None = Field(default=None, max_length=64)
    code: str | None = Field(default=None, max_length=100)


class McpToolsChangedRequest(Message):
    """An MCP app → focus: its server's `tools/list` (each tool as on the wire) after the server
    said `notifications/tools/list_changed`. Focus maps them (`mcp_server.tools_of`) into the
    app's tools, a development app's only, and publishes a new inventory revision if they
    changed."""

    type: Literal["focus.sdk.mcp.tools_changed"] = "focus.sdk.mcp.tools_changed"
    tools: tuple[dict[str, Any], ...] = Field(max_length=512)


class McpToolsChangedReply(Message):
    type: Literal["focus.sdk.mcp.tools_changed.reply"] = "focus.sdk.mcp.tools_changed.reply"
    tools: int  # how many the app now offers
    refused: int  # how many of the server's were left out
