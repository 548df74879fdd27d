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
from lineup.sdk.protocol import MAX_ITEM_ORDER, ViewItem

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
    "ViewItemsPageReply",
    "ViewItemsPageRequest",
    "ViewsReply",
    "ViewsRequest",
]


class AppView(Message):
    type: Literal["focus.view"] = "focus.view"
    app_scope: str
    instance_id: str
    view: dict[str, Any]
    items: int = 0  # how many items focus keeps for the instance (ask for them by page)


class ViewsRequest(Message):
    """The latest view of every live instance (the Shell (re)connected), a bounded page at a
    time: from the `offset`-th on."""

    type: Literal["focus.ui.views.get"] = "focus.ui.views.get"
    offset: int = Field(default=0, ge=0)


class ViewsReply(Message):
    type: Literal["focus.ui.views.get.reply"] = "focus.ui.views.get.reply"
    views: tuple[AppView, ...]
    foreground: str = "chat"
    instances: tuple[dict[str, Any], ...] = ()
    next_offset: int | None = None  # ask again from here: more views than one reply holds


class ViewItemsPageRequest(Message):
    """The newest items of an instance shown before `(before_order, before_id)` (the newest
    of all without them), as many as one bounded page holds."""

    type: Literal["focus.ui.view.items.page"] = "focus.ui.view.items.page"
    instance_id: str = Field(min_length=1, max_length=200)
    before_order: int | None = Field(default=None, ge=0, le=MAX_ITEM_ORDER)
    before_id: str | None = Field(default=None, max_length=200)


class ViewItemsPageReply(Message):
    type: Literal["focus.ui.view.items.page.reply"] = "focus.ui.view.items.page.reply"
    app_scope: str
    instance_id: str
    items: tuple[ViewItem, ...]  # oldest first
    more: bool  # older items remain


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
