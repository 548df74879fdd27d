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
    "SurfaceAccepted",
    "SurfaceAssetsReply",
    "SurfaceAssetsRequest",
    "SurfaceEventRequest",
    "SurfaceSessionDataRequest",
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


# ---------------------------------------------------------------------------------- surfaces
#
# From the hostbridge, on behalf of a Surface (the Shell checked the message first, the
# hostbridge second; focus checks it a third time against the manifest). Each names the
# instance and its `surface_id`; one that is not that instance's open Surface is refused
# `surface_not_found`, an instance that is not live `app_instance_not_found`.


class SurfaceAssetsRequest(Message):
    """Where the hostbridge serves an open Surface's files from: its app's `web/` folder."""

    type: Literal["focus.ui.surface.assets"] = "focus.ui.surface.assets"
    instance_id: str = Field(min_length=1, max_length=200)


class SurfaceAssetsReply(Message):
    type: Literal["focus.ui.surface.assets.reply"] = "focus.ui.surface.assets.reply"
    instance_id: str
    surface_id: str
    web_root: str  # an absolute folder path: the hostbridge's alone, never sent to a Shell
    document: str  # the entry document, relative to `web_root` (`index.html`)


class SurfaceEventRequest(Message):
    """The Surface sent an app event (`lineup/event`); `name` must be one its entrypoint
    declares (`bridge_method_unknown`), `data` within `MAX_SURFACE_EVENT_BYTES`
    (`bridge_message_too_large`). Handed to the app as `miniapp.surface.event`."""

    type: Literal["focus.ui.surface.event"] = "focus.ui.surface.event"
    instance_id: str = Field(min_length=1, max_length=200)
    surface_id: str = Field(min_length=1, max_length=200)
    name: str = Field(min_length=1, max_length=128)
    data: dict[str, Any] = Field(default_factory=dict)


class SurfaceSessionDataRequest(Message):
    """The Surface reads, replaces or subscribes to its instance's session data, as the app
    does (`focus.sdk.session_data.*`): `replace` needs `data` and `expected_revision` and is
    refused `stale_revision` after a newer write. A subscription makes the hostbridge a
    subscriber: it is sent `hostbridge.session_data.updated` on every newer revision."""

    type: Literal["focus.ui.surface.session_data"] = "focus.ui.surface.session_data"
    instance_id: str = Field(min_length=1, max_length=200)
    surface_id: str = Field(min_length=1, max_length=200)
    op: Literal["get", "replace", "subscribe"]
    data: dict[str, Any] | None = None
    expected_revision: int | None = Field(default=None, ge=0)


class SurfaceAccepted(Message):
    """Reply to an event or a session data request: the data and revision as they now are
    (for an event, `revision` is the session data's, `data` omitted)."""

    type: Literal["focus.ui.surface.accepted"] = "focus.ui.surface.accepted"
    instance_id: str
    surface_id: str
    revision: int = 0
    data: dict[str, Any] | None = None
