"""The calls of a tool linked to a Surface, as the runtime shows them there (issue 30).

Theory of operation
-------------------
A tool linked to its app's UI (`ToolDescriptor.ui`, the MCP Apps spec's `_meta.ui`) has its
lifecycle owned by the runtime, not by the app: the router, once a step of such a call has
committed (persist, then tell), asks focus to show it (`focus.surface.tool_step`). Given to its
instance, the call opens that instance's Surface if it is not open, with the call's arguments
as the tool input and the call as `tool_info` (the spec's `hostContext.toolInfo`); its outcome
then reaches the Surface once: the CallToolResult of its result or of its failure, or the code
it was cancelled with. The Shell's bridge turns those into `ui/notifications/tool-input`,
`tool-result` and `tool-cancelled`. A step focus cannot show (the instance ended, no such
Surface this host runs, over a bound) is answered `shown` False and logged by its code: the
call itself goes on, and the app still has it.

The Surface's own `tools/call` (`focus.ui.surface.tool_call`) is a local UI action, never the
Agent's and never recorded as its calls are: checked here (its open Surface; a tool of its own
app, named as the spec names it, by its bare name; enabled; callable by the app, its
`visibility`; at most `UI_CALLS_PER_WINDOW` per instance in any `UI_CALL_WINDOW_S`; its input
against the schema), then run by the app's process and answered as a CallToolResult, the result
checked against the output schema again. Focus tells the app the call (`miniapp.ui.tool_call`)
and the app tells focus its outcome (`focus.sdk.surface.tool_done`), which the waiting request
takes; focus never asks an app and waits, so no two processes ask each other around a loop
(tests/test_graphs.py). An app that says nothing within `UI_CALL_WAIT_S` is
`deadline_exceeded`. A refusal is its code (`tool_not_advertised`, `tool_not_visible`,
`app_disabled`, `rate_limited`, `tool_input_invalid`, `surface_not_found`), audited as every
Surface refusal is; a call run is audited `focus.surface_tool_called` with the tool and the
outcome's code, never its content.
The Surface's `resources/read` of a resource of its server (`focus.ui.surface.resource_read`:
a URI that is not one of its app's UI documents, which the hostbridge reads itself) goes the
same way: checked (its open Surface; an app of kind `mcp`, enabled; the same window as its
calls), told to the app (`miniapp.ui.resource_read`), whose server answers it, and the app's
word (`focus.sdk.surface.resource_done`) awaited at most `UI_READ_WAIT_S`; its contents are
checked again (`live_contents_refusal`). Any other app's page is `resource_not_found`, as a
URI it does not have is. Each read is audited `focus.surface_resource_read` by its code,
never its URI or contents.
Progress the tool reports while it runs (`focus.sdk.surface.tool_progress`, from that app
only) goes to the hostbridge that asked, as MCP's `notifications/progress` params, at most one
report per `PROGRESS_INTERVAL_S` per call (a faster one is dropped); one for a call that is
over is dropped.
"""

from __future__ import annotations

import logging
import secrets
from collections import deque
from dataclasses import dataclass, field
from typing import Final

import trio

from lineup.actors.kernel import AuditRecord, Envelope, ErrorCode, LineUpError, app_scope_of
from lineup.hostbridge.messages import SurfaceToolProgressEvent
from lineup.sdk import protocol as sdk
from lineup.sdk.manifest import ToolDescriptor, tool_id
from lineup.sdk.mcp_apps import (
    UI_RESOURCE_READ_TIMEOUT_S,
    UI_TOOL_CALL_TIMEOUT_S,
    call_tool_error,
    call_tool_result,
    live_contents_refusal,
    mcp_progress,
)

from ._access import Access
from ._port import NOTIFY_TIMEOUT, Port
from ._surfaces import Surface, SurfaceBook, surface_entrypoint
from ._view_service import ViewService
from .messages import (
    SurfaceResourceReadReply,
    SurfaceResourceReadRequest,
    SurfaceToolCallReply,
    SurfaceToolCallRequest,
    SurfaceToolStepReply,
    SurfaceToolStepRequest,
)

__all__ = ["SurfaceTools"]

log = logging.getLogger("lineup.focus")

UI_CALL_WINDOW_S: Final = 10.0
UI_CALLS_PER_WINDOW: Final = 20  # a Surface's own tool calls, per instance
MAX_WINDOWS: Final = 1_000
PROGRESS_INTERVAL_S: Final = 0.1


@dataclass
class _Running:
    """A Surface's own call while its app runs it: where its progress goes."""

    app_scope: str
    instance_id: str
    surface_id: str
    request_id: str
    asker: str  # the hostbridge that relayed it
    reports: int = 0
    last: float = float("-inf")
    done: trio.Event = field(default_factory=trio.Event)
    outcome: sdk.UiToolCallDoneRequest | None = None


UI_CALL_WAIT_S: Final = UI_TOOL_CALL_TIMEOUT_S + 5.0  # the app stops the call first
UI_READ_WAIT_S: Final = UI_RESOURCE_READ_TIMEOUT_S + 2.0  # the app gives up on its server first


@dataclass
class _Read:
    """A Surface's read of its server's resource while its app asks the server."""

    app_scope: str
    done: trio.Event = field(default_factory=trio.Event)
    outcome: sdk.UiResourceReadDoneRequest | None = None


class SurfaceTools:
    """Focus's side of a UI-linked tool's calls (the module's docstring)."""

    def __init__(
        self, port: Port, access: Access, surfaces: SurfaceBook, views: ViewService
    ) -> None:
        self._port = port
        self._calls: dict[str, deque[float]] = {}  # per instance: its calls' times, in window
        self._running: dict[str, _Running] = {}  # by call id
        self._reads: dict[str, _Read] = {}  # by read id
        self._book = access.book
        self._instances = access.instances
        self._surfaces = surfaces
        self._views = views

    def step(self, msg: SurfaceToolStepRequest) -> SurfaceToolStepReply:
        """Show one step of a call on its instance's Surface (the module's docstring)."""
        try:
            surface = self._show(msg)
        except LineUpError as refused:
            log.info("focus.surface_tool_step_not_shown code=%s", refused.code.value)
            return SurfaceToolStepReply(shown=False)
        if surface is None:
            return SurfaceToolStepReply(shown=False)
        self._views.show(surface.app_scope, surface.instance_id, surface.view())
        return SurfaceToolStepReply(shown=True)

    def _show(self, msg: SurfaceToolStepRequest) -> Surface | None:
        if self._instances.live_scope(msg.instance_id) != msg.app_scope:
            return None  # it ended: its Surface went with it
        if msg.step == "input":
            entrypoint = surface_entrypoint(self._book.manifest(msg.app_scope), msg.entrypoint)
            surface, _ = self._surfaces.show_call(
                msg.app_scope,
                msg.instance_id,
                entrypoint,
                label=self._book.title(msg.app_scope),
                tool_input=msg.tool_input or {},
                tool_info=msg.tool_info or {"id": msg.call_id},
            )
            return surface
        if msg.step == "cancelled":
            return self._surfaces.end_call(
                msg.instance_id, msg.call_id, cancelled=msg.reason or "cancelled"
            )
        result = msg.result or {}
        try:
            return self._surfaces.end_call(msg.instance_id, msg.call_id, result=result)
        except LineUpError:
            # Over the Surface's bound with the text beside it: the structured result alone.
            if "structuredContent" not in result:
                raise
            alone = {**result, "content": []}
            return self._surfaces.end_call(msg.instance_id, msg.call_id, result=alone)

    # ------------------------------------------------------------------ the Surface's own calls

    async def call(self, msg: SurfaceToolCallRequest, env: Envelope) -> SurfaceToolCallReply:
        """Run one of its app's tools for the Surface (the module's docstring). Raises the
        refusal's code, audited."""
        try:
            descriptor = self._callable(msg)
        except LineUpError as refused:
            raise self._port.surface_refused(env, msg.instance_id, refused) from refused
        scope = descriptor.scope
        told = sdk.UiToolCallEvent(
            call_id=f"ui-{secrets.token_hex(8)}",
            tool=descriptor.method,
            instance_id=msg.instance_id,
            input=msg.arguments,
        )
        running = _Running(scope, msg.instance_id, msg.surface_id, msg.request_id, env.sender.name)
        self._running[told.call_id] = running
        try:
            down = await self._port.bus.tell(f"miniapp:{scope}", told, timeout=NOTIFY_TIMEOUT)
            if down is None:
                with trio.move_on_after(UI_CALL_WAIT_S):
                    await running.done.wait()
        finally:
            del self._running[told.call_id]
        outcome = running.outcome
        if outcome is None:  # not reached, or no word in time
            silent = LineUpError(down or ErrorCode.DEADLINE_EXCEEDED, "the app did not answer")
            raise self._port.surface_refused(env, msg.instance_id, silent)
        code = outcome.code
        if outcome.result is not None and descriptor.output_violations(outcome.result):
            code = ErrorCode.TOOL_OUTPUT_INVALID.value  # the app's process is not trusted
        elif outcome.result is None and code is None:
            code = ErrorCode.HANDLER_FAILED.value
        self._port.bus.audit(
            AuditRecord(
                event="focus.surface_tool_called",
                actor=self._port.me.name,
                peer=env.sender.name,
                code=code,
                message_type=descriptor.id[:200],
                subject_id=msg.instance_id[:200],
            )
        )
        if code is not None or outcome.result is None:
            return SurfaceToolCallReply(result=call_tool_error(code or "handler_failed"))
        return SurfaceToolCallReply(result=call_tool_result(outcome.result, descriptor))

    def done(self, msg: sdk.UiToolCallDoneRequest, env: Envelope) -> sdk.CommandReceipt:
        """The app's outcome of a call its Surface made: to the request waiting for it. One
        for a call that is over (or told twice) changes nothing; another app's is
        `app_scope_mismatch`, audited."""
        running = self._running.get(msg.call_id)
        if running is None or running.done.is_set():
            return sdk.CommandReceipt(id=msg.call_id, changed=False)
        if running.app_scope != app_scope_of(env.sender):
            missing = LineUpError(ErrorCode.APP_SCOPE_MISMATCH, msg.call_id)
            raise self._port.surface_refused(env, msg.call_id, missing)
        running.outcome = msg
        running.done.set()
        return sdk.CommandReceipt(id=msg.call_id)

    async def progress(self, msg: sdk.UiToolProgressRequest, env: Envelope) -> sdk.CommandReceipt:
        """The app's progress of a call its Surface made: to the page (the module's
        docstring). Another app's call is `app_scope_mismatch`, audited."""
        running = self._running.get(msg.call_id)
        if running is None:
            return sdk.CommandReceipt(id=msg.call_id, changed=False)  # over: dropped
        if running.app_scope != app_scope_of(env.sender):
            missing = LineUpError(ErrorCode.APP_SCOPE_MISMATCH, msg.call_id)
            raise self._port.surface_refused(env, msg.call_id, missing)
        now = trio.current_time()
        if now - running.last < PROGRESS_INTERVAL_S or not running.request_id:
            return sdk.CommandReceipt(id=msg.call_id, changed=False)
        running.last = now
        running.reports += 1
        event = SurfaceToolProgressEvent(
            instance_id=running.instance_id,
            surface_id=running.surface_id,
            request_id=running.request_id,
            progress=mcp_progress(msg.progress, running.reports),
        )
        await self._port.bus.tell(running.asker, event, timeout=NOTIFY_TIMEOUT)
        return sdk.CommandReceipt(id=msg.call_id)

    # ------------------------------------------------------------------ its server's resources

    async def read(
        self, msg: SurfaceResourceReadRequest, env: Envelope
    ) -> SurfaceResourceReadReply:
        """Read a resource of its app's server for the Surface (the module's docstring).
        Raises the refusal's or the read's code, audited."""
        try:
            scope = self._readable(msg)
        except LineUpError as refused:
            raise self._port.surface_refused(env, msg.instance_id, refused) from refused
        told = sdk.UiResourceReadEvent(
            read_id=f"res-{secrets.token_hex(8)}", instance_id=msg.instance_id, uri=msg.uri
        )
        read = self._reads[told.read_id] = _Read(scope)
        try:
            down = await self._port.bus.tell(f"miniapp:{scope}", told, timeout=NOTIFY_TIMEOUT)
            if down is None:
                with trio.move_on_after(UI_READ_WAIT_S):
                    await read.done.wait()
        finally:
            del self._reads[told.read_id]
        outcome = read.outcome
        if outcome is None:
            code: str | None = (down or ErrorCode.DEADLINE_EXCEEDED).value
        elif outcome.contents is None:
            code = outcome.code or ErrorCode.HANDLER_FAILED.value
        else:
            code = live_contents_refusal(outcome.contents)  # the app's process is not trusted
        self._port.bus.audit(
            AuditRecord(
                event="focus.surface_resource_read",
                actor=self._port.me.name,
                peer=env.sender.name,
                code=code,
                message_type=env.body.TYPE,
                subject_id=msg.instance_id[:200],
            )
        )
        if code is not None or outcome is None or outcome.contents is None:
            raise LineUpError(_code(code), "the resource was not read")
        return SurfaceResourceReadReply(contents=outcome.contents)

    def read_done(self, msg: sdk.UiResourceReadDoneRequest, env: Envelope) -> sdk.CommandReceipt:
        """The app's answer to a read its Surface made: to the request waiting for it; another
        app's is `app_scope_mismatch`, audited."""
        read = self._reads.get(msg.read_id)
        if read is None or read.done.is_set():
            return sdk.CommandReceipt(id=msg.read_id, changed=False)
        if read.app_scope != app_scope_of(env.sender):
            missing = LineUpError(ErrorCode.APP_SCOPE_MISMATCH, msg.read_id)
            raise self._port.surface_refused(env, msg.read_id, missing)
        read.outcome = msg
        read.done.set()
        return sdk.CommandReceipt(id=msg.read_id)

    def _readable(self, msg: SurfaceResourceReadRequest) -> str:
        scope = self._instances.live_scope(msg.instance_id)
        if scope is None:
            raise LineUpError(ErrorCode.APP_INSTANCE_NOT_FOUND, msg.instance_id)
        self._surfaces.named(msg.instance_id, msg.surface_id)  # raises surface_not_found
        manifest = self._book.manifest(scope)
        if manifest is None or manifest.kind != "mcp":  # its resources are its UI's alone
            raise LineUpError(ErrorCode.RESOURCE_NOT_FOUND, "no server of this app")
        if not self._book.enabled(scope):
            raise LineUpError(ErrorCode.APP_DISABLED, scope)
        if not self._take(msg.instance_id):
            raise LineUpError(ErrorCode.RATE_LIMITED, msg.instance_id)
        return scope

    def _callable(self, msg: SurfaceToolCallRequest) -> ToolDescriptor:
        scope = self._instances.live_scope(msg.instance_id)
        if scope is None:
            raise LineUpError(ErrorCode.APP_INSTANCE_NOT_FOUND, msg.instance_id)
        self._surfaces.named(msg.instance_id, msg.surface_id)  # raises surface_not_found
        manifest = self._book.manifest(scope)
        names = {msg.name, tool_id(scope, msg.name), f"{scope}.{msg.name}"}
        descriptor = next(
            (
                tool
                for tool in (manifest.placed_tools() if manifest is not None else ())
                if tool.method in names or tool.id in names
            ),
            None,
        )
        if descriptor is None:
            raise LineUpError(ErrorCode.TOOL_NOT_ADVERTISED, msg.name)
        if not self._book.enabled(scope):
            raise LineUpError(ErrorCode.APP_DISABLED, scope)
        if not descriptor.app_callable:
            raise LineUpError(ErrorCode.TOOL_NOT_VISIBLE, msg.name)
        if not self._take(msg.instance_id):
            raise LineUpError(ErrorCode.RATE_LIMITED, msg.instance_id)
        if descriptor.input_violations(msg.arguments):  # by its delivery's JSON Schema
            raise LineUpError(ErrorCode.TOOL_INPUT_INVALID, msg.name)
        return descriptor

    def _take(self, instance_id: str) -> bool:
        """Count one call of the instance's if its window has room (sliding)."""
        now = trio.current_time()
        if len(self._calls) > MAX_WINDOWS:  # ended instances' windows: the stale ones go
            for stale in [k for k, w in self._calls.items() if w[-1] <= now - UI_CALL_WINDOW_S]:
                del self._calls[stale]
        window = self._calls.setdefault(instance_id, deque())
        while window and window[0] <= now - UI_CALL_WINDOW_S:
            window.popleft()
        if len(window) >= UI_CALLS_PER_WINDOW:
            return False
        window.append(now)
        return True


def _code(value: str | None) -> ErrorCode:
    try:
        return ErrorCode(value or ErrorCode.HANDLER_FAILED.value)
    except ValueError:
        return ErrorCode.HANDLER_FAILED
