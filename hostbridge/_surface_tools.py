"""An MCP App's `tools/call` through the hostbridge (issue 30): its own app's tool, run as a
local UI action.

The Shell's `surface.request` of `tools/call` (checked as every Surface request is) goes to focus
(`focus.ui.surface.tool_call`), which checks the tool and has the app run it, from a task of its
own (at most `MAX_TOOL_CALLS` at once, from every Shell; more are `bridge_rate_limited`): a tool
may take its time, and the Shell's socket goes on reading meanwhile. The reply's result is the
spec's `CallToolResult`, to the Shell that asked only; so is the progress focus tells while the
call runs (`hostbridge.surface.tool_progress`), as a reply with `progress` set, not final.

An MCP app's page's `resources/read` of its server's own resource (`_surface_mcp.
server_resource`: not one of its UI documents, not `ui://`) goes the same way, sharing the
bound: to focus (`focus.ui.surface.resource_read`), which has the app ask its server, and the
reply's result is the spec's `ReadResourceResult`.
"""

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Annotated, Any, Final

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from lineup.actors.focus.messages import (
    SurfaceResourceReadReply,
    SurfaceResourceReadRequest,
    SurfaceToolCallReply,
    SurfaceToolCallRequest,
)
from lineup.actors.kernel import Bus, ErrorCode, LineUpError
from lineup.sdk.mcp_apps import UI_RESOURCE_READ_TIMEOUT_S, UI_TOOL_CALL_TIMEOUT_S

from .messages import SurfaceToolProgressEvent
from .shell_protocol import ShellSurfaceReply, SurfaceRequestFrame

if TYPE_CHECKING:
    from ._server import Reply
    from ._surface_book import SurfaceBook

__all__ = ["MAX_TOOL_CALLS", "SurfaceToolRelay", "ToolsCallParams"]

MAX_TOOL_CALLS: Final = 16  # an MCP App's `tools/call`s relayed at once, from every Shell
TOOL_CALL_TIMEOUT: Final = UI_TOOL_CALL_TIMEOUT_S + 10.0  # focus and the app end it first
READ_TIMEOUT: Final = UI_RESOURCE_READ_TIMEOUT_S + 4.0  # focus ends it first, the Shell after


class ToolsCallParams(BaseModel):
    """An MCP App's `tools/call` (the spec's `CallToolRequest` params): focus finds the tool
    and checks the arguments against its input schema. `_meta` (a progress token) is the
    Shell's to use."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    name: Annotated[str, Field(min_length=1, max_length=128)]
    arguments: dict[str, Any] = Field(default_factory=dict)
    meta: dict[str, Any] | None = Field(default=None, alias="_meta")


class SurfaceToolRelay:
    """The `tools/call`s on their way (the module's docstring)."""

    def __init__(self, bus: Bus, book: "SurfaceBook") -> None:
        self._bus = bus
        self._book = book
        self.spawn: Callable[[Callable[[], Awaitable[None]]], None] | None = None
        self._running = 0
        self._progress: dict[str, Reply] = {}  # by request id: the Shell that asked

    def call(
        self,
        frame: SurfaceRequestFrame,
        params: ToolsCallParams,
        reply: "Reply",
        refused: Callable[[str], None],
    ) -> None:
        """Relay one call from a task of its own; `refused` audits a refusal made here."""

        async def ask() -> dict[str, Any]:
            done = await self._bus.request(
                "focus",
                SurfaceToolCallRequest(
                    instance_id=frame.instance_id,
                    surface_id=frame.surface_id,
                    name=params.name,
                    arguments=params.arguments,
                    request_id=frame.request_id,
                ),
                expect=SurfaceToolCallReply,
                timeout=TOOL_CALL_TIMEOUT,  # never retried: a tool may change things
            )
            return done.result

        if self._relay(frame, reply, refused, ask):
            self._progress[frame.request_id] = reply  # before its task runs: it pops it

    def read(
        self,
        frame: SurfaceRequestFrame,
        uri: str,
        reply: "Reply",
        refused: Callable[[str], None],
    ) -> None:
        """Relay one read of the app's server's resource from a task of its own (the module's
        docstring); `refused` audits a refusal made here."""

        async def ask() -> dict[str, Any]:
            done = await self._bus.request(
                "focus",
                SurfaceResourceReadRequest(
                    instance_id=frame.instance_id, surface_id=frame.surface_id, uri=uri
                ),
                expect=SurfaceResourceReadReply,
                timeout=READ_TIMEOUT,
                retry=True,  # reading changes nothing
            )
            return {"contents": list(done.contents)}

        self._relay(frame, reply, refused, ask)

    def _relay(
        self,
        frame: SurfaceRequestFrame,
        reply: "Reply",
        refused: Callable[[str], None],
        ask: Callable[[], Awaitable[dict[str, Any]]],
    ) -> bool:
        """Run `ask` (focus's answer, the reply's result) from a task of its own, at most
        MAX_TOOL_CALLS at once: False, the request refused and audited, past that bound."""
        if self.spawn is None or self._running >= MAX_TOOL_CALLS:
            code = ErrorCode.BRIDGE_RATE_LIMITED.value
            refused(code)
            reply(frame.answer(error=code))
            return False
        self._running += 1

        async def relay() -> None:
            try:
                result = await ask()
            except LineUpError as exc:
                reply(frame.answer(error=exc.code.value))  # focus audits its own refusals
                return
            finally:
                self._running -= 1
                if self._progress.get(frame.request_id) is reply:
                    del self._progress[frame.request_id]
            reply(frame.answer(result=result))

        self.spawn(relay)
        return True

    def progress(self, msg: SurfaceToolProgressEvent) -> None:
        """Progress of a call still running: to the Shell that asked, if it still waits."""
        reply = self._progress.get(msg.request_id)
        if reply is None or self._book.check(msg.instance_id, msg.surface_id) is not None:
            return
        try:
            frame = ShellSurfaceReply(
                request_id=msg.request_id,
                instance_id=msg.instance_id,
                surface_id=msg.surface_id,
                progress=msg.progress,
            )
        except ValidationError:
            return
        reply(frame)
