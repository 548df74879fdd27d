"""What an app's code sees: the `MiniApp` base class, whose hooks the runtime calls, and the
`AppContext` it is given at start (the runtime's facts and the SDK's services).

Every event the runtime sends the app (a delivery, a user action, a state change) is handed
to the app's hooks one at a time, in arrival order (`_host.MiniAppHost` does), so app code
never races with itself. Deliveries are at-least-once, so hooks must be idempotent by id.
"""

from __future__ import annotations

from typing import Literal

from lineup.facts.scopes import CHAT

from . import protocol as p
from ._services import (
    Apps,
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
from .operations import Operations

__all__ = ["AppContext", "MiniApp"]


class AppContext:
    """What the runtime gives one MiniApp process (seed 003 §3 `MiniAppContext`): read-only
    facts the runtime injects — `app_scope` (from the channel), `instance_id` (the instance
    the process was started for), `conversation_id`, `app_version`, `state` of that instance,
    and `mode` (`im` for the chat) — plus the SDK's services. The app can neither pass nor
    change them: `refresh` reads them again from the runtime."""

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
        self.state = state
        self.mode: Literal["im", "app"] = "im" if app_scope == CHAT else "app"
        self.inbox = Inbox(host)
        self.conversation = Conversation(host)
        self.ui = Ui(host, instance_id)
        self.lifecycle = Lifecycle(host)
        self.session_data = SessionData(host)
        self.artifacts = Artifacts(host)
        self.capabilities = Capabilities(host, instance_id)
        self.apps = Apps(host)
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
            self.state = reply.state
        return reply


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
