"""What an app's code sees: the `MiniApp` base class, whose hooks the runtime calls, and the
`AppContext` it is given at start (the runtime's facts and the SDK's services).

Every event the runtime sends the app (a delivery, a user action, a state change) is handed
to the app's hooks one at a time, in arrival order (`_host.MiniAppHost` does), so app code
never races with itself. Deliveries are at-least-once, so hooks must be idempotent by id.
"""

from __future__ import annotations

from typing import Literal

from lineup.facts.modes import DEFAULT_MODE, MODAL_SCOPES, NO_MODE, Mode

from . import protocol as p
from ._actions import Actions
from ._agent_messages import AgentMessages
from ._diagnostics import Diagnostics
from ._navigation import Navigation
from ._services import (
    Artifacts,
    Capabilities,
    Conversation,
    Inbox,
    Lifecycle,
    Registry,
    RuntimeChannel,
    SessionData,
    Surfaces,
    Ui,
)
from ._state import State
from .operations import Operations

__all__ = ["AppContext", "MiniApp"]


class AppContext:
    """What the runtime gives one MiniApp process (seed 003 §3 `MiniAppContext`): read-only
    facts the runtime injects — `app_scope` (from the channel), `instance_id` (the instance
    the process was started for), `conversation_id`, `app_version`, `instance_state` of that
    instance, and `mode` (the chat's, as the runtime records it: `im`, `audio` or `video`;
    `app` for an app without modes); seed 004 §6.1's `kind`, `entrypoint`, `scope` and
    `granted_permissions` — plus the SDK's services (`state` is the app's view model, seed 004
    §6.1). The app can neither pass nor change them: `refresh` reads them again from the
    runtime, and `switch_mode` asks it for another mode."""

    def __init__(
        self,
        host: RuntimeChannel,
        app_scope: str,
        instance_id: str,
        *,
        app_version: str = "",
        conversation_id: str | None = None,
        state: str = "starting",
    ) -> None:
        self._host = host
        self.app_scope = app_scope
        self.instance_id = instance_id
        self.app_version = app_version
        self.conversation_id = conversation_id
        self.instance_state = state
        self.mode: Literal["im", "audio", "video", "app"] = (
            DEFAULT_MODE if app_scope in MODAL_SCOPES else NO_MODE
        )
        self.inbox = Inbox(host)
        self.agent_messages = AgentMessages(host, instance_id)  # seed 004 §5.4, on the inbox
        self.conversation = Conversation(host)
        self.ui = Ui(host, instance_id)
        self.lifecycle = Lifecycle(host)
        self.session_data = SessionData(host)
        self.artifacts = Artifacts(host)
        self.capabilities = Capabilities(host, instance_id)
        self.apps = Navigation(host, instance_id)  # seed 004 §6.2; `apps.open` as it was
        self.state = State(host)  # seed 004 §6.1: the app's view model, cut to its scope
        self.actions = Actions(host, instance_id)  # seed 004 §6.2: declarative user actions
        self.diagnostics = Diagnostics(host, instance_id)
        # The rest of seed 004 §6.1, which `refresh` reads (until then: what a start knows).
        self.kind: Literal["core", "installed"] = "installed"
        self.entrypoint: str | None = None
        self.scope = p.AppContextScope(conversation_id=conversation_id)
        self.granted_permissions: tuple[str, ...] = ()
        self.surfaces = Surfaces(host)
        self.registry = Registry(host)  # answered to the App Registry alone
        self.operations = Operations(host)  # deadline operations: the runtime ends the call

    async def refresh(self, instance_id: str | None = None) -> p.ContextReply:
        """The runtime's facts about `instance_id` (one of this app's; default: the process's
        own, whose fields here are updated). Raises `app_instance_not_found` for any other."""
        reply = await self._host.call(
            "router",
            p.ContextRequest(instance_id=instance_id or self.instance_id),
            p.ContextReply,
        )
        if reply.instance_id == self.instance_id:
            self.conversation_id = reply.conversation_id
            self.instance_state = reply.state
            self.mode = reply.mode
            self.kind = reply.kind
            self.entrypoint = reply.entrypoint
            self.scope = reply.scope
            self.granted_permissions = reply.granted_permissions
        return reply

    async def switch_mode(self, mode: Mode, instance_id: str | None = None) -> p.CommandReceipt:
        """Ask the runtime to switch `instance_id` (default: the process's own) to `mode`
        (seed 003 §5.1: Interact's `im` / `audio` / `video`). The runtime records it, then
        tells the app (`MiniApp.on_mode_changed`, and `mode` here changes then), so the mode
        survives the app's restart and comes back when the apps in front of it close. Raises
        `invalid_arguments` for an app without modes, `app_instance_not_found` for an instance
        not the app's live one. Never starts any media."""
        return await self._host.call(
            "focus",
            p.ModeSwitchRequest(instance_id=instance_id or self.instance_id, mode=mode),
            p.CommandReceipt,
        )

    def _mode_changed(self, event: p.ModeChangedEvent) -> None:
        if event.instance_id == self.instance_id:
            self.mode = event.mode


class MiniApp:
    """Base class of a MiniApp's logic. Override the hooks you need; each runs alone."""

    async def start(self, app: AppContext) -> None:
        """Called once when the process starts, before any other hook."""

    async def on_delivery(self, delivery: p.Delivery) -> None:
        """A delivery to this app's inbox; acknowledge it once handled."""

    async def on_deliveries(self, deliveries: tuple[p.Delivery, ...]) -> None:
        """Deliveries that were waiting together, in order (one or more). By default
        `on_delivery` for each; override it to handle a burst at once (render once)."""
        for delivery in deliveries:
            await self.on_delivery(delivery)

    async def on_ui_event(self, event: p.UiEvent) -> None:
        """The user acted on one of this app's views."""

    async def on_conversation_updated(self, event: p.ConversationUpdatedEvent) -> None:
        """One of this app's outgoing messages changed state."""

    async def on_view_refresh(self) -> None:
        """The runtime lost its copy of the view, or the conversation changed (a first login
        after the history was read): render again, re-reading the history and the inbox."""

    async def on_tool_cancelled(self, call_id: str, code: str) -> None:
        """A call of this app expired, was cancelled, or its instance closed: stop on it."""

    async def on_operation_ended(self, operation: p.OperationInfo) -> None:
        """One of this app's deadline operations ended (`operation.state`): the runtime wrote
        its call's result. Update what the app shows; told at least once while it runs."""

    async def on_interaction_updated(self, record: p.InteractionRecord) -> None:
        """One of this app's interactions has its answer (`record.result`) or ended
        (cancelled, expired, failed: `record.terminal_code`). Told at least once."""

    async def on_surface_event(self, event: p.SurfaceEvent) -> None:
        """One of this app's Surfaces sent an event its entrypoint declares (`event.name`).
        Not retried by the runtime: a Surface re-sends what it needs acknowledged."""

    async def on_surface_closed(self, event: p.SurfaceClosedEvent) -> None:
        """One of this app's Surfaces is gone: `closed` (the app asked) or `instance_ended`."""

    async def on_mode_changed(self, event: p.ModeChangedEvent) -> None:
        """One of this app's instances is in `event.mode` (an app with modes: Interact):
        switched, or back in front in the mode it was in (`event.restored`). The context's
        `mode` already says it. Told at least once: the same mode again is no change."""
