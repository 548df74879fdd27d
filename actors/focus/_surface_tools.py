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
"""

from __future__ import annotations

import logging

from lineup.actors.kernel import LineUpError

from ._access import Access
from ._surfaces import Surface, SurfaceBook, surface_entrypoint
from ._view_service import ViewService
from .messages import SurfaceToolStepReply, SurfaceToolStepRequest

__all__ = ["SurfaceTools"]

log = logging.getLogger("lineup.focus")


class SurfaceTools:
    """Focus's side of a UI-linked tool's calls (the module's docstring)."""

    def __init__(self, access: Access, surfaces: SurfaceBook, views: ViewService) -> None:
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
