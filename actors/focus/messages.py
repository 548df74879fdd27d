"""The focus actor's whole public protocol. Every tag starts with `focus.`.

`focus.ui.*` comes from the hostbridge (the user); `focus.sdk.*` (from MiniApps) is declared in
`lineup.sdk.protocol`. Besides these focus answers the kernel's `kernel.health.request`.
"""

from functools import cached_property
from typing import Any, Literal

from pydantic import Field

from lineup.actors.kernel import Message
from lineup.actors.kernel.control import HealthReply, HealthRequest
from lineup.facts.modes import Mode
from lineup.facts.scopes import CHAT
from lineup.hostbridge.messages import LaunchableApp, LiveInstance
from lineup.sdk.manifest import AgentSubscription, ToolDescriptor
from lineup.sdk.mcp_apps import McpAppUi
from lineup.sdk.protocol import (
    MAX_ITEM_ORDER,
    AppOperationInfo,
    RegistryAppInfo,
    RegistryListReply,
    ViewItem,
)

from ._registry_messages import (
    MAX_BUNDLE_BYTES,
    DevAppListRequest,
    DevAppRefusedEvent,
    DevAppReloadReply,
    DevAppReloadRequest,
    RegistryInspectReply,
    RegistryInspectRequest,
    RegistryInstallRequest,
    RegistryListRequest,
    RegistryOperateRequest,
)

__all__ = [
    "MAX_BUNDLE_BYTES",
    "AppEnableRequest",
    "AppOperationInfo",
    "AppView",
    "CapabilitiesChangedEvent",
    "CapabilityContextReply",
    "CapabilityContextRequest",
    "DevAppListRequest",
    "DevAppRefusedEvent",
    "DevAppReloadReply",
    "DevAppReloadRequest",
    "FindInstanceRequest",
    "HealthReply",
    "HealthRequest",
    "InstanceContextReply",
    "InstanceContextRequest",
    "InstanceReply",
    "InventoryReply",
    "InventoryRequest",
    "LaunchRequest",
    "RegistryAppInfo",
    "RegistryInspectReply",
    "RegistryInspectRequest",
    "RegistryInstallRequest",
    "RegistryListReply",
    "RegistryListRequest",
    "RegistryOperateRequest",
    "SurfaceAccepted",
    "SurfaceAppReply",
    "SurfaceAppRequest",
    "SurfaceAssetsReply",
    "SurfaceAssetsRequest",
    "SurfaceEventRequest",
    "SurfaceResource",
    "SurfaceResourceReadReply",
    "SurfaceResourceReadRequest",
    "SurfaceSessionDataRequest",
    "SurfaceToolCallReply",
    "SurfaceToolCallRequest",
    "SurfaceToolStepReply",
    "SurfaceToolStepRequest",
    "UiEventAccepted",
    "UiEventRequest",
    "UiIntentRequest",
    "UiOpenRequest",
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
    version: int = 0  # focus's monotonic clock when it took the view (hostbridge.view.updated)


class ViewsRequest(Message):
    """The latest view of every live instance (the Shell (re)connected), a bounded page at a
    time: from the `offset`-th on."""

    type: Literal["focus.ui.views.get"] = "focus.ui.views.get"
    offset: int = Field(default=0, ge=0)


class ViewsReply(Message):
    type: Literal["focus.ui.views.get.reply"] = "focus.ui.views.get.reply"
    views: tuple[AppView, ...]
    foreground: str = CHAT
    instances: tuple[LiveInstance, ...] = ()
    next_offset: int | None = None  # ask again from here: more views than one reply holds
    launchable: tuple[LaunchableApp, ...] = ()  # as in hostbridge.apps.updated
    apps_version: int = 0  # the list's `version`, as in hostbridge.apps.updated


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
    disabled_tools: tuple[str, ...]  # tool ids (`ToolDescriptor.id`) of disabled apps
    installed: tuple[str, ...] = ()  # every installed app_scope, enabled or not, chat included
    # Tools of apps in the registry that cannot run here (incompatible, unavailable): a call
    # naming one is refused `tool_not_visible`.
    hidden_tools: tuple[str, ...] = ()
    # What the router's delivery chain checks of an app (seed 004 §5.3): the usable apps'
    # manifest `agent_subscriptions`, the disabled apps, and why an app cannot run here.
    agent_subscriptions: dict[str, tuple[AgentSubscription, ...]] = {}
    disabled_apps: tuple[str, ...] = ()
    refused_apps: dict[str, str] = {}  # app_scope -> its ErrorCode value
    # The permissions each usable app holds that the chain's `permission` step reads
    # (`lineup.sdk.manifest.CONVERSATION_TEXTS`); an app not named holds none.
    app_permissions: dict[str, tuple[str, ...]] = {}

    def tool(self, tool_id: str) -> ToolDescriptor | None:
        """The advertised tool whose id is `tool_id` (`ToolDescriptor.id`), or None (not
        advertised, or disabled)."""
        return self.tools_by_id.get(tool_id)

    @cached_property
    def tools_by_id(self) -> dict[str, ToolDescriptor]:
        """The advertised tools by id (the first of an id, as a scan finds it): built once per
        inventory, which is frozen, instead of a scan (each id computed) per lookup, several of
        which every tool call makes."""
        found: dict[str, ToolDescriptor] = {}
        for descriptor in self.tools:
            found.setdefault(descriptor.id, descriptor)
        return found


class LaunchRequest(Message):
    """router → focus: create (or find, for this call) an instance of `app_scope`, start its
    process and bring it forward. Idempotent by `call_id`: a retry finds the same instance."""

    type: Literal["focus.instance.launch"] = "focus.instance.launch"
    app_scope: str = Field(min_length=1, max_length=100)
    call_id: str = Field(min_length=1, max_length=200)
    foreground: bool = True
    conversation_id: str | None = Field(default=None, max_length=200)  # kept on its record
    # The tool's `restore_previous_focus`: when the instance closes, the app in front before
    # it takes the front again (True), or the recovery app does (False).
    restore_previous_focus: bool = True


class InstanceReply(Message):
    """An instance as focus has it: its state, its mode (Interact's; None for an app without
    modes) and the instance whose app opened it (seed 000 §6)."""

    type: Literal["focus.instance.reply"] = "focus.instance.reply"
    instance_id: str
    app_scope: str
    state: str
    mode: Mode | None = None
    parent_instance_id: str | None = None


class FindInstanceRequest(Message):
    """router → focus: the live instance a call for `app_scope` goes to (the given one, or the
    app's topmost live instance); `foreground` brings it forward first."""

    type: Literal["focus.instance.find"] = "focus.instance.find"
    app_scope: str = Field(min_length=1, max_length=100)
    instance_id: str | None = Field(default=None, max_length=200)
    foreground: bool = False


class InstanceContextRequest(Message):
    """router → focus: what focus knows of one of `app_scope`'s instances for its SDK context
    (seed 004 §6.1); another app's, or one focus does not know, is `app_instance_not_found`."""

    type: Literal["focus.instance.context"] = "focus.instance.context"
    app_scope: str = Field(min_length=1, max_length=100)
    instance_id: str = Field(min_length=1, max_length=200)


class InstanceContextReply(Message):
    type: Literal["focus.instance.context.reply"] = "focus.instance.context.reply"
    kind: Literal["core", "installed"]
    entrypoint: str | None = None
    parent_instance_id: str | None = None
    granted_permissions: tuple[str, ...] = ()


class UiIntentRequest(Message):
    """Shell → focus (through the hostbridge): the user switches to or closes an instance.
    `force`: a close the user insists on, which no app's close request holds back."""

    type: Literal["focus.ui.intent"] = "focus.ui.intent"
    intent: Literal["focus", "close"]
    instance_id: str = Field(min_length=1, max_length=200)
    force: bool = False


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


class SurfaceResource(Message):
    """One of the app's MCP App UI documents, for its Surface's `resources/list|read`: the
    entrypoint's id, its document under `web_root`, and its `_meta.ui` in the spec's spelling
    (`lineup.sdk.mcp_apps.ui_meta`)."""

    type: Literal["focus.ui.surface.resource"] = "focus.ui.surface.resource"
    entrypoint: str
    document: str
    ui: dict[str, Any] = Field(default_factory=dict)


class SurfaceAssetsReply(Message):
    type: Literal["focus.ui.surface.assets.reply"] = "focus.ui.surface.assets.reply"
    instance_id: str
    surface_id: str
    web_root: str  # an absolute folder path: the hostbridge's alone, never sent to a Shell
    document: str  # the entry document, relative to `web_root` (`index.html`)
    mcp_ui: McpAppUi | None = None  # what its entrypoint declares, if it is an MCP App's
    mcp_app: bool = False  # the document is an MCP App's UI (`lineup.sdk.mcp_apps`)
    # The app's resources (`lineup.sdk.mcp_apps`): each MCP App UI document it declares.
    resources: tuple[SurfaceResource, ...] = ()


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


class SurfaceToolStepRequest(Message):
    """router → focus: a call of a tool linked to a Surface (`ToolDescriptor.ui`) moved on, and
    the runtime shows it there (issue 30). `input`: it was given to its instance, whose
    Surface (`entrypoint`) opens if it is not open, showing `tool_input` and `tool_info`;
    `result`: its outcome as a CallToolResult (`result`); `cancelled`: it ended with the code
    `reason` (cancelled, expired, `app_closed`)."""

    type: Literal["focus.surface.tool_step"] = "focus.surface.tool_step"
    app_scope: str = Field(min_length=1, max_length=100)
    instance_id: str = Field(min_length=1, max_length=200)
    call_id: str = Field(min_length=1, max_length=200)
    entrypoint: str = Field(min_length=1, max_length=128)
    step: Literal["input", "result", "cancelled"]
    tool_input: dict[str, Any] | None = None
    tool_info: dict[str, Any] | None = None
    result: dict[str, Any] | None = None
    reason: str | None = Field(default=None, max_length=100)


class SurfaceToolStepReply(Message):
    """Whether the Surface shows the step (False: no Surface of that call is open)."""

    type: Literal["focus.surface.tool_step.done"] = "focus.surface.tool_step.done"
    shown: bool


class SurfaceToolCallRequest(Message):
    """hostbridge → focus: the Surface calls one of its own app's tools (the MCP Apps
    `tools/call`), as a local UI action: `name` is the tool's id, its method, or (the spec's
    bare name) its method without the app's scope."""

    type: Literal["focus.ui.surface.tool_call"] = "focus.ui.surface.tool_call"
    instance_id: str = Field(min_length=1, max_length=200)
    surface_id: str = Field(min_length=1, max_length=200)
    name: str = Field(min_length=1, max_length=128)
    arguments: dict[str, Any] = Field(default_factory=dict)
    request_id: str = Field(default="", max_length=200)  # the Shell's: its progress goes there


class SurfaceToolCallReply(Message):
    """The call's MCP `CallToolResult` (an app's failure is one with `isError`)."""

    type: Literal["focus.ui.surface.tool_call.done"] = "focus.ui.surface.tool_call.done"
    result: dict[str, Any]


class SurfaceResourceReadRequest(Message):
    """hostbridge → focus: the Surface of an MCP app reads a resource of its server that is
    not one of the app's UI documents (MCP `resources/read`), live, through the app."""

    type: Literal["focus.ui.surface.resource_read"] = "focus.ui.surface.resource_read"
    instance_id: str = Field(min_length=1, max_length=200)
    surface_id: str = Field(min_length=1, max_length=200)
    uri: str = Field(min_length=1, max_length=2048)


class SurfaceResourceReadReply(Message):
    """The server's `ReadResourceResult` contents (each `uri`, `text` or `blob`, ...)."""

    type: Literal["focus.ui.surface.resource_read.done"] = "focus.ui.surface.resource_read.done"
    contents: tuple[dict[str, Any], ...]


class SurfaceAppRequest(Message):
    """The Surface asks, for its own app and instance, what the app's SDK may (seed 004 §6:
    "the same semantics, restricted"): its view model (`state`), a subscription to it
    (`state.subscribe`: `{"view", "seq"}` now, and the sender told `hostbridge.surface.notify`
    of each new view while that Surface is open), the apps it may open (`apps.list`), or a
    lifecycle or navigation action (`action`, one of `sdk.SURFACE_ACTION_KINDS`). Decided
    exactly as the app's own request would be."""

    type: Literal["focus.ui.surface.app"] = "focus.ui.surface.app"
    instance_id: str = Field(min_length=1, max_length=200)
    surface_id: str = Field(min_length=1, max_length=200)
    method: Literal["state", "state.subscribe", "apps.list", "action"]
    action: dict[str, Any] | None = None


class SurfaceAppReply(Message):
    type: Literal["focus.ui.surface.app.reply"] = "focus.ui.surface.app.reply"
    result: dict[str, Any]


# ---------------------------------------------------------------------------------- capabilities
#
# From the gateway, which decides capability requests: what it must know of the app and the
# instance (focus owns both), and that a grant changed (the inventory may change with it).


class CapabilityContextRequest(Message):
    """What the gateway checks before a capability runs. With `app_scope` (a MiniApp's own
    request), the instance must be that app's (`app_instance_not_found` otherwise, exactly as
    a missing one); without (a Surface's request, from the hostbridge), the owner is found."""

    type: Literal["focus.capability.context"] = "focus.capability.context"
    instance_id: str = Field(min_length=1, max_length=200)
    app_scope: str | None = Field(default=None, max_length=100)


class CapabilityContextReply(Message):
    type: Literal["focus.capability.context.reply"] = "focus.capability.context.reply"
    app_scope: str
    app_title: str
    instance_id: str
    enabled: bool
    live: bool  # starting, foreground or background (suspended is not live for this)
    foreground: bool  # the instance is the top of the focus stack
    declared: tuple[str, ...]  # the manifest's requested_capabilities, and those implied
    # What its MCP App entrypoints declare (`surface.network`, `surface.devices` name it).
    surface_access: McpAppUi = McpAppUi()
    # The hosts its MCP server declares (`mcp.network` names them).
    mcp_network: tuple[str, ...] = ()


class CapabilitiesChangedEvent(Message):
    """gateway → focus: a grant was made, changed or revoked. Focus reads the grants again
    (`store.capability_grant.list`) and publishes a new inventory revision if the tools it
    leaves out (those whose `permissions` name a capability their app cannot use) changed."""

    type: Literal["focus.capabilities.changed"] = "focus.capabilities.changed"


# ---------------------------------------------------------------------------------- start target


class UiOpenRequest(Message):
    """Shell → focus (through the hostbridge): the user names an app to open, the explicit
    start target of seed 004 §4.3 (the Shell's deep link `#open=<app_scope>`). Its topmost
    live instance comes to the front (resumed first if it is suspended), else a new instance
    is launched in front; either way its app is told (`miniapp.ui.event` of kind `app.opened`:
    no tool call may come to show it). `chat` brings the recovery app forward. Refused
    `app_not_installed`, `app_disabled` (or whatever else the registry says of the app) and
    `activation_failed`: what is in front stays. The reply is `InstanceReply`."""

    type: Literal["focus.ui.open"] = "focus.ui.open"
    app_scope: str = Field(min_length=1, max_length=100)
