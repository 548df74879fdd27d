"""The focus actor's whole public protocol. Every tag starts with `focus.`.

`focus.ui.*` comes from the hostbridge (the user); `focus.sdk.*` (from MiniApps) is declared in
`lineup.sdk.protocol`. Besides these focus answers the kernel's `kernel.health.request`.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from lineup.actors.kernel import Message
from lineup.actors.kernel.control import HealthReply, HealthRequest
from lineup.sdk.manifest import ToolDescriptor

__all__ = [
    "AppEnableRequest",
    "AppView",
    "FindInstanceRequest",
    "HealthReply",
    "HealthRequest",
    "InstanceReply",
    "InventoryReply",
    "InventoryRequest",
    "LaunchRequest",
    "UiEventAccepted",
    "UiEventRequest",
    "UiIntentRequest",
    "ViewsReply",
    "ViewsRequest",
]


class AppView(Message):
    type: Literal["focus.view"] = "focus.view"
    app_scope: str
    instance_id: str
    view: dict[str, Any]


class ViewsRequest(Message):
    """The latest view of every live instance (the Shell (re)connected)."""

    type: Literal["focus.ui.views.get"] = "focus.ui.views.get"


class ViewsReply(Message):
    type: Literal["focus.ui.views.get.reply"] = "focus.ui.views.get.reply"
    views: tuple[AppView, ...]
    foreground: str = "chat"
    instances: tuple[dict[str, Any], ...] = ()


class UiEventRequest(Message):
    """A user action on an instance's view, from the Shell (sender kind: user)."""

    type: Literal["focus.ui.event"] = "focus.ui.event"
    instance_id: str = Field(min_length=1, max_length=200)
    event: dict[str, Any]


class UiEventAccepted(Message):
    type: Literal["focus.ui.event.reply"] = "focus.ui.event.reply"
    instance_id: str


class InventoryRequest(Message):
    """router → focus: the tools the Agent may call now, with their revision."""

    type: Literal["focus.inventory.get"] = "focus.inventory.get"


class InventoryReply(Message):
    """The tools the Agent may call now, typed end to end: the wire's JSON is dumped from these
    at the router's edge (`lineup.wire.InventoryPayload`), nowhere else."""

    type: Literal["focus.inventory.get.reply"] = "focus.inventory.get.reply"
    revision: str
    tools: tuple[ToolDescriptor, ...]  # every enabled app's tools
    disabled_tools: tuple[str, ...]  # tool ids of installed apps that are disabled
    installed: tuple[str, ...] = ()  # every installed app_scope, enabled or not, chat included

    def tool(self, method: str) -> ToolDescriptor | None:
        """The advertised tool named `method`, or None (not advertised, or disabled)."""
        return next((t for t in self.tools if t.method == method), None)


class LaunchRequest(Message):
    """router → focus: create (or find, for this call) an instance of `app_scope`, start its
    process and bring it forward. Idempotent by `call_id`: a retry finds the same instance."""

    type: Literal["focus.instance.launch"] = "focus.instance.launch"
    app_scope: str = Field(min_length=1, max_length=100)
    call_id: str = Field(min_length=1, max_length=200)
    foreground: bool = True


class InstanceReply(Message):
    type: Literal["focus.instance.reply"] = "focus.instance.reply"
    instance_id: str
    app_scope: str
    state: str


class FindInstanceRequest(Message):
    """router → focus: the live instance a call for `app_scope` goes to (the given one, or the
    app's topmost live instance); `foreground` brings it forward first."""

    type: Literal["focus.instance.find"] = "focus.instance.find"
    app_scope: str = Field(min_length=1, max_length=100)
    instance_id: str | None = Field(default=None, max_length=200)
    foreground: bool = False


class UiIntentRequest(Message):
    """Shell → focus (through the hostbridge): the user switches to or closes an instance."""

    type: Literal["focus.ui.intent"] = "focus.ui.intent"
    intent: Literal["focus", "close"]
    instance_id: str = Field(min_length=1, max_length=200)


class AppEnableRequest(Message):
    """Enable or disable an installed app: its tools leave or join the inventory."""

    type: Literal["focus.ui.app.enable"] = "focus.ui.app.enable"
    app_scope: str = Field(min_length=1, max_length=100)
    enabled: bool
