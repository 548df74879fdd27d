"""The focus actor's whole public protocol. Every tag starts with `focus.`.

`focus.ui.*` comes from the hostbridge (the user); `focus.sdk.*` (from MiniApps) is declared in
`lineup.sdk.protocol`. Besides these focus answers the kernel's `kernel.health.request`.
"""

from __future__ import annotations

from functools import cached_property
from typing import Any, Literal, Self

from pydantic import Field, model_validator

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

MAX_BUNDLE_BYTES = 16 * 1024 * 1024  # one bundle file, read whole into memory to verify

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


# ---------------------------------------------------------------------------------- registry
#
# App delivery (seed 004 §4.3, §8.3, seed 000 §9). From the supervisor (the `lineup app` CLI on
# the control socket: the user at the terminal) and from the gateway (the App Registry's
# `app.install` / `app.manage`, after the user confirmed it in the runtime's prompt). Never from
# the router: there is no Agent tool for any of it. Every request is one `AppOperation`,
# recorded as it moves (requested → running → completed | failed) and audited; the reply is the
# operation as it ended (a failure is `state` failed with its `code`, not an error), except for
# a malformed request (`invalid_arguments`).


class RegistryInstallRequest(Message):
    """Install a signed bundle, or update an installed app to it (the active version becomes
    the predecessor). Exactly one of `path` (a file the CLI's user named), `url` (HTTPS; HTTP
    to loopback only when the runtime runs in development), `bundle_b64` (the App Registry's
    artifact, read by the gateway) or `catalog_file` (a plain file name of the local catalog
    folder: `catalog_entry_not_found` when it holds none such). Everything is verified in
    memory before a byte is written; a failure leaves the cache and the active version as they
    were, and starts nothing: `bundle_malformed`, `signature_invalid`, `unknown_key`,
    `size_mismatch`, `digest_mismatch`, `host_version_unsupported`, `app_version_mismatch`,
    `revoked`, `url_not_allowed`, `download_failed`, `catalog_entry_not_found`. Idempotent by
    `operation_id`."""

    type: Literal["focus.registry.install"] = "focus.registry.install"
    operation_id: str = Field(min_length=1, max_length=200)
    path: str | None = Field(default=None, max_length=4096)
    url: str | None = Field(default=None, max_length=4096)
    bundle_b64: str | None = Field(default=None, max_length=(MAX_BUNDLE_BYTES * 4) // 3 + 4)
    catalog_file: str | None = Field(default=None, max_length=200)
    # The signed digest the user was shown (the gateway's prompt, from `inspect`): a bundle
    # that is another by the time it is read (a catalog file replaced) is `digest_mismatch`.
    sha256: str | None = Field(default=None, max_length=64)

    @model_validator(mode="after")
    def _one_source(self) -> Self:
        sources = (self.path, self.url, self.bundle_b64, self.catalog_file)
        if sum(source is not None for source in sources) != 1:
            raise ValueError("exactly one of path, url, bundle_b64 and catalog_file")
        if self.path is not None and not self.path.startswith("/"):
            raise ValueError("path must be absolute")  # focus does not know the sender's cwd
        return self


class RegistryInspectRequest(Message):
    """What a bundle is, and whether it would install (`code` None) or why not, without
    installing it: the gateway's prompt names the app, version and signer from it. Exactly
    one of `bundle_b64` and `catalog_file` (as in `RegistryInstallRequest`)."""

    type: Literal["focus.registry.inspect"] = "focus.registry.inspect"
    bundle_b64: str | None = Field(default=None, max_length=(MAX_BUNDLE_BYTES * 4) // 3 + 4)
    catalog_file: str | None = Field(default=None, max_length=200)


class RegistryInspectReply(Message):
    type: Literal["focus.registry.inspect.reply"] = "focus.registry.inspect.reply"
    app_scope: str | None
    version: str | None
    key_id: str | None
    title: str | None = None  # its verified manifest's (None: unverified, or none given)
    size: int
    code: str | None  # None: it would install (or update) now
    sha256: str | None = None  # the signed payload digest (pin the install to it)


class RegistryOperateRequest(Message):
    """Enable, disable (new calls stop; the live instances wind down as on a close), roll back
    (only to the verified predecessor: `no_predecessor`), revoke `version` (an active one rolls
    back, or the app becomes `unavailable` with no predecessor), remove (the instances are
    closed first; then the bundle, the app's private data dir and its session data are
    cleared) or make the default app. `chat` can be neither disabled nor removed
    (`app_protected`); an unknown app is `app_not_installed`. Idempotent by `operation_id`."""

    type: Literal["focus.registry.operate"] = "focus.registry.operate"
    operation_id: str = Field(min_length=1, max_length=200)
    kind: Literal["enable", "disable", "rollback", "revoke", "remove", "set_default"]
    app_scope: str = Field(min_length=1, max_length=100)
    version: str | None = Field(default=None, min_length=1, max_length=64)

    @model_validator(mode="after")
    def _version_for_revoke(self) -> Self:
        if (self.kind == "revoke") != (self.version is not None):
            raise ValueError("a version with revoke, and only with revoke")
        return self


class RegistryListRequest(Message):
    """The registry as the App Registry and `lineup app list --json` show it; the reply is
    `lineup.sdk.protocol.RegistryListReply`."""

    type: Literal["focus.registry.list"] = "focus.registry.list"


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


# ---------------------------------------------------------------------------------- dev reload
#
# From the dev-app watcher (`lineup.ops.devwatch`, the child `devwatch`), which watches each
# `lineup run --dev-app` folder and regenerates its manifest when a file in it changes
# (`_dev_reload` has the theory). The ACL reserves these to it.


class DevAppListRequest(Message):
    """devwatch → focus: the registry, as `focus.registry.list` answers it (a
    `RegistryListReply`), for the watcher to name the development apps an installed app
    shadows."""

    type: Literal["focus.dev_app.list"] = "focus.dev_app.list"


class DevAppReloadRequest(Message):
    """devwatch → focus: the development app `app_scope` changed, and its manifest file (the
    registry entry's `manifest`, which focus reads again) is the new one: reload the app (its
    registry entry, its live instances' process, the inventory if its tools changed) and tell
    the Shell. Refused `app_not_installed` (no development app of that scope) and
    `app_scope_mismatch` (the new manifest names another scope: a restart of lineup takes it)
    and `invalid_arguments` (it does not load), having changed nothing: what ran keeps
    running, and the watcher prints the refusal and tells it back for the Shell."""

    type: Literal["focus.dev_app.reload"] = "focus.dev_app.reload"
    app_scope: str = Field(min_length=1, max_length=100)


class DevAppReloadReply(Message):
    """The app reloaded: the inventory `revision` now (new if `tools_changed`), and how many
    live instances had their process restarted."""

    type: Literal["focus.dev_app.reloaded"] = "focus.dev_app.reloaded"
    app_scope: str
    revision: str
    tools_changed: bool
    restarted: int = Field(ge=0)


class DevAppRefusedEvent(Message):
    """devwatch → focus: the development app's new version was refused before focus saw it
    (its manifest could not be generated): `line` is what the terminal printed, for the Shell
    to show as an error notice. Nothing else changes."""

    type: Literal["focus.dev_app.refused"] = "focus.dev_app.refused"
    app_scope: str = Field(min_length=1, max_length=100)
    line: str = Field(min_length=1, max_length=2000)
