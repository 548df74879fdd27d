"""The focus actor: the registry, instances, the focus stack, and views (DESIGN §1, §5).

Theory of operation
-------------------
*Registry.* The bundled MiniApps (`lineup.miniapps.catalogue`) and any configured ones are
what this runtime offers. Their manifests are read from their packages (the runtime never
imports a MiniApp's code, only its manifest) and recorded in the store with their enabled
flag; the installed ones come from their verified cache (`_installed`). The inventory is every
enabled app's tools; its revision changes exactly when that set does, to a new and higher one
even when the content is one seen before (the store's counter keeps a content's revision only
while it is the current one), and the router is told (`_publisher`).

*Instances* live and end by `_lifecycle`: each change is persisted before anyone is told, and
focus rebuilds them from the store when it starts. Focus tells the router when it starts, too
(`router.instance.recovered`): an `ended` event lost with a focus that died right after
persisting is then made up by the router's sweep.

This module is the wiring and the handlers. Focus's state is two books — the apps (`AppBook`)
and the instances (`Instances`, which decides each change and says its effects) — that the
services read through `Access` and reach the tree through one `Port`: the lifecycle, the
registry (`_registry`, `_install`), views, Surfaces, session data, reloads of development
apps, and the start target. Each handler delegates to one of them.
"""

from __future__ import annotations

import logging
import secrets
from collections.abc import Awaitable
from typing import Any

import trio

import lineup
from lineup.actors.kernel import (
    Actor,
    ActorKind,
    Envelope,
    ErrorCode,
    LineUpError,
    app_scope_of,
    handles,
)
from lineup.actors.kernel.control import AppFailedEvent
from lineup.actors.router.messages import InstancesRecoveredEvent
from lineup.actors.store.messages import (
    AppRegistryListReply,
    AppRegistryListRequest,
    AppRegistryPutReply,
    AppRegistryPutRequest,
    SettingGetReply,
    SettingGetRequest,
)
from lineup.facts.scopes import CHAT
from lineup.miniapps import catalogue
from lineup.sdk import protocol as sdk
from lineup.sdk.manifest import CLOSE_REQUESTS_FEATURE, incompatibility, load_manifest

from ._access import Access
from ._app_book import AppBook, AppEntry
from ._app_state import AppState, Lineage
from ._capability_context import CapabilityFacts, context_of
from ._dev_reload import DevReload
from ._diagnostics import Diagnostics
from ._install import Installer
from ._installed import InstalledApps
from ._instances import Instances
from ._inventory import Inventory
from ._lifecycle import Lifecycle
from ._navigation import Navigation
from ._navigation_handlers import NavigationHandlers
from ._operation_log import OperationLog
from ._port import NOTIFY_TIMEOUT, Port
from ._publisher import Publisher
from ._registry import DEFAULT_APP, RegistryService
from ._session_data import SessionData
from ._start import StartTargets
from ._surface_service import SurfaceService
from ._surface_tools import SurfaceTools
from ._surfaces import SurfaceBook
from ._view_service import ViewService
from ._views import ViewBook
from .messages import (
    AppEnableRequest,
    AppOperationInfo,
    CapabilitiesChangedEvent,
    CapabilityContextReply,
    CapabilityContextRequest,
    DevAppListRequest,
    DevAppRefusedEvent,
    DevAppReloadReply,
    DevAppReloadRequest,
    FindInstanceRequest,
    InstanceReply,
    InventoryReply,
    InventoryRequest,
    LaunchRequest,
    RegistryInspectReply,
    RegistryInspectRequest,
    RegistryInstallRequest,
    RegistryListReply,
    RegistryListRequest,
    RegistryOperateRequest,
    SurfaceAccepted,
    SurfaceAssetsReply,
    SurfaceAssetsRequest,
    SurfaceEventRequest,
    SurfaceResourceReadReply,
    SurfaceResourceReadRequest,
    SurfaceSessionDataRequest,
    SurfaceToolCallReply,
    SurfaceToolCallRequest,
    SurfaceToolStepReply,
    SurfaceToolStepRequest,
    UiEventAccepted,
    UiEventRequest,
    UiIntentRequest,
    UiOpenRequest,
    ViewItemsPageReply,
    ViewItemsPageRequest,
    ViewsReply,
    ViewsRequest,
)

__all__ = ["FocusActor"]

log = logging.getLogger("lineup.focus")


class FocusActor(Actor, NavigationHandlers):
    kind = ActorKind.FOCUS

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        config = self.ctx.config
        # The apps this runtime offers: the shipped ones (unless a test or bench leaves them
        # out), then the configured ones (a configured one replaces a shipped one of its
        # scope); their manifests are read at start, and the registry adds the installed ones.
        bundled = catalogue.registry_entries() if config.get("bundled_apps", True) else []
        self.book = AppBook()
        for app in [*bundled, *config.get("apps", [])]:
            self.book.put(AppEntry.configured(app))
        self.instances = Instances()
        self.port = Port(self.bus, self.ctx.identity)
        self.access = Access(self.port, self.book, self.instances)
        # The Agent's tools: a tool whose app cannot use a capability it declares is left out.
        self.inventory = Inventory(self.book, CapabilityFacts(config.get("capabilities")))
        self.publisher = Publisher(self.port, self.access, self.inventory)
        # The catalogue's own apps (not one a configuration replaced): they alone draw with
        # the Shell's trusted components. The chat is the tree's own, whatever is configured.
        configured = {str(app["app_scope"]) for app in config.get("apps", [])}
        shipped = {str(app["app_scope"]) for app in bundled} - configured
        # The books of the views and the Surfaces (no I/O), and their services.
        self.view_book = ViewBook(frozenset(shipped | {CHAT}))
        self.surface_book = SurfaceBook()
        self.views = ViewService(self.port, self.access, self.view_book, self.surface_book)
        self.sessions = SessionData(self.port, self.access, self.surface_book)
        self.surface_tools = SurfaceTools(self.port, self.access, self.surface_book, self.views)
        self.surfaces = SurfaceService(
            self.port, self.access, self.surface_book, self.sessions, self.views
        )
        self.installed = InstalledApps(
            self.port, self.book, self.publisher, self.ctx.data_dir, config
        )
        self.lifecycle = Lifecycle(
            self.port, self.access, self.installed, self.views, self.surfaces
        )
        ops = OperationLog(self.port)
        self.installer = Installer(self.port, self.installed, ops, self.lifecycle, self.publisher)
        self.registry = RegistryService(
            self.port, self.installed, ops, self.lifecycle, self.publisher
        )
        # Reload on save of the development apps (`lineup run --dev-app`).
        self.dev_reload = DevReload(self.port, self.access, self.lifecycle, self.publisher)
        # The start target (seed 004 §4.3): the user's deep link, else what can be restored,
        # else the default app, else the chat.
        self.starts = StartTargets(
            topmost=self.instances.topmost,
            require_enabled=self.access.require_enabled,
            foreground=self.lifecycle.bring_forward,
            launch=lambda scope, call_id: self.lifecycle.launch(
                LaunchRequest(app_scope=scope, call_id=call_id)
            ),
            tell_app=lambda scope, event: self.port.soon(self.port.tell_app, scope, event),
        )
        # The SDK's state views, navigation, actions and diagnostics (seed 004 §6.1, §6.2).
        self.lineage = Lineage()
        self.app_state = AppState(self.port, self.access, self.lineage, self.surface_book)
        self.access.watchers.append(self.app_state.changed)
        self.navigation = Navigation(
            self.port,
            self.access,
            self.lifecycle,
            self.starts,
            self.app_state,
            self.lineage,
            self.surface_book,
            self.inventory.capabilities,
            self._default_app,
        )
        self.diagnostics = Diagnostics(self.port, self.access, self.lineage, self.app_state)

    # ------------------------------------------------------------------ start-up

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        await self._load_apps()
        await self.lifecycle.recover(runtime_restarted=self.ctx.incarnation == 1)
        async with trio.open_nursery() as nursery:
            self.port.nursery = nursery
            task_status.started()
            for scope in self.instances.scopes_up():
                nursery.start_soon(self.port.tell_app, scope, sdk.ViewRefreshEvent())
            nursery.start_soon(self.access.push_apps)
            nursery.start_soon(self.port.tell_router, InstancesRecoveredEvent())
            nursery.start_soon(self._apply_start_target)
            try:
                await trio.sleep_forever()
            finally:
                # Shutting down: what a request still being answered would start in the
                # background (a push, a tell) has nowhere to run, and is dropped.
                self.port.nursery = None

    async def _apply_start_target(self) -> None:
        front = self.instances.front()
        await self.starts.at_start(
            focus_restarted=self.ctx.incarnation > 1,
            front=None if front is None else (front, self.instances.owners()[front]),
            default=self._default_app,
        )

    async def _default_app(self) -> str | None:
        reply = await self.port.store(SettingGetRequest(name=DEFAULT_APP), SettingGetReply)
        return reply.value if isinstance(reply.value, str) else None

    async def _load_apps(self) -> None:
        """Record the offered apps' manifests in the store, read their enabled flags, load
        the installed ones, read the grants, and give the inventory its revision."""
        for app in self.book:
            scope = app.scope
            if scope == CHAT:
                continue
            raw = await trio.Path(app.manifest_file).read_bytes()
            manifest = load_manifest(raw)
            try:
                await self.port.store(
                    AppRegistryPutRequest(
                        app_scope=scope,
                        version=manifest.version,
                        kind=manifest.kind,
                        manifest=manifest.model_dump(mode="json"),
                        source="dev" if app.source == "dev" else "bundled",
                    ),
                    AppRegistryPutReply,
                )
            except LineUpError as exc:
                if exc.code is not ErrorCode.APP_PROTECTED:
                    raise
                # An installed app has this scope: its verified bundle wins.
                log.warning("focus.app_shadowed app=%s", scope)
                self.book.drop(scope)
                continue
            refusal = incompatibility(manifest, lineup.__version__)
            if refusal is not None:  # listed, never run: its tools are hidden, a launch refused
                log.warning("focus.app_incompatible app=%s code=%s", scope, refusal.value)
            self.book.change(scope, manifest=manifest, refusal=refusal)
        rows = await self.port.store(AppRegistryListRequest(), AppRegistryListReply)
        for row in rows.apps:
            if row.app_scope in self.book:
                self.book.change(row.app_scope, enabled=row.enabled)
        await self.installed.load()  # the installed apps, from their verified cache
        await self.publisher.read_grants()
        await self.publisher.bump()

    # ------------------------------------------------------------------ the registry

    @handles(InventoryRequest)
    def on_inventory(self, msg: InventoryRequest, env: Envelope) -> InventoryReply:
        return self.inventory.reply()

    @handles(AppEnableRequest)
    async def on_app_enable(self, msg: AppEnableRequest, env: Envelope) -> InventoryReply:
        """The Shell's switch: an enable or disable operation like any other (`_registry`)."""
        if self.book.manifest(msg.app_scope) is None and self.book.refusal(msg.app_scope) is None:
            raise LineUpError(ErrorCode.APP_NOT_INSTALLED, msg.app_scope)
        done = await self.registry.operate(
            RegistryOperateRequest(
                operation_id=f"ui-{secrets.token_hex(8)}",
                kind="enable" if msg.enabled else "disable",
                app_scope=msg.app_scope,
            )
        )
        if done.state == "failed":
            raise LineUpError(ErrorCode(done.code or ErrorCode.INTERNAL_ERROR.value), msg.app_scope)
        return self.inventory.reply()

    @handles(DevAppReloadRequest)
    async def on_dev_app_reload(self, msg: DevAppReloadRequest, env: Envelope) -> DevAppReloadReply:
        return await self.dev_reload.reload(msg)

    @handles(sdk.McpToolsChangedRequest)
    async def on_mcp_tools_changed(
        self, msg: sdk.McpToolsChangedRequest, env: Envelope
    ) -> sdk.McpToolsChangedReply:
        return await self.dev_reload.mcp_tools_changed(app_scope_of(env.sender), msg)

    @handles(DevAppRefusedEvent)
    async def on_dev_app_refused(self, msg: DevAppRefusedEvent, env: Envelope) -> None:
        await self.dev_reload.refused(msg)

    @handles(RegistryInstallRequest)
    async def on_registry_install(
        self, msg: RegistryInstallRequest, env: Envelope
    ) -> AppOperationInfo:
        return await self.installer.install(msg)

    @handles(RegistryInspectRequest)
    async def on_registry_inspect(
        self, msg: RegistryInspectRequest, env: Envelope
    ) -> RegistryInspectReply:
        return await self.installer.inspect(msg)

    @handles(RegistryOperateRequest)
    async def on_registry_operate(
        self, msg: RegistryOperateRequest, env: Envelope
    ) -> AppOperationInfo:
        return await self.registry.operate(msg)

    @handles(RegistryListRequest)
    async def on_registry_list(self, msg: RegistryListRequest, env: Envelope) -> RegistryListReply:
        return await self.registry.list()

    @handles(DevAppListRequest)
    async def on_dev_app_list(self, msg: DevAppListRequest, env: Envelope) -> RegistryListReply:
        return await self.registry.list()  # the dev-app watcher's (the ACL reserves it to it)

    @handles(sdk.RegistryListRequest)
    async def on_sdk_registry_list(
        self, msg: sdk.RegistryListRequest, env: Envelope
    ) -> RegistryListReply:
        return await self.registry.list()  # the App Registry's (the ACL reserves it to it)

    @handles(CapabilityContextRequest)
    def on_capability_context(
        self, msg: CapabilityContextRequest, env: Envelope
    ) -> CapabilityContextReply:
        return context_of(msg, instances=self.instances, book=self.book)

    @handles(CapabilitiesChangedEvent)
    async def on_capabilities_changed(self, msg: CapabilitiesChangedEvent, env: Envelope) -> None:
        await self.publisher.grants_changed()

    # ------------------------------------------------------------------ instances

    @handles(LaunchRequest)
    async def on_launch(self, msg: LaunchRequest, env: Envelope) -> InstanceReply:
        return await self.lifecycle.launch(msg)

    @handles(sdk.AppOpenRequest)
    async def on_app_open(self, msg: sdk.AppOpenRequest, env: Envelope) -> sdk.AppOpenReply:
        """A MiniApp's navigation request: the same decision and path as an Agent's launch,
        keyed by the asking app and its request id so a retry opens nothing new."""
        return await self.navigation.open(app_scope_of(env.sender), msg.app_scope, msg.request_id)

    @handles(FindInstanceRequest)
    async def on_find(self, msg: FindInstanceRequest, env: Envelope) -> InstanceReply:
        if env.sender.kind is ActorKind.ROUTER:
            # It asked: it may have no index yet (it restarted, or focus had no channel to it).
            self.port.soon(self.access.tell_index)
        return await self.lifecycle.find(msg.app_scope, msg.instance_id, foreground=msg.foreground)

    @handles(AppFailedEvent)
    async def on_app_failed(self, msg: AppFailedEvent, env: Envelope) -> None:
        await self.lifecycle.app_failed(msg.app_scope, msg.code)

    @handles(sdk.LifecycleRequest)
    async def on_lifecycle(self, msg: sdk.LifecycleRequest, env: Envelope) -> sdk.CommandReceipt:
        self.access.owned(env, msg.instance_id)
        await self.lifecycle.change(msg.instance_id, msg.action)
        return sdk.CommandReceipt(id=msg.instance_id)

    @handles(sdk.ModeSwitchRequest)
    async def on_mode_switch(self, msg: sdk.ModeSwitchRequest, env: Envelope) -> sdk.CommandReceipt:
        """An app with modes switches one of its instances (seed 003 §5.1): recorded, then
        the app is told (`miniapp.mode.changed`) and the Shell's list shows it."""
        self.access.owned(env, msg.instance_id)
        await self.lifecycle.switch_mode(msg.instance_id, msg.mode)
        return sdk.CommandReceipt(id=msg.instance_id)

    @handles(UiOpenRequest)
    async def on_ui_open(self, msg: UiOpenRequest, env: Envelope) -> InstanceReply:
        return await self.starts.open(msg.app_scope)

    @handles(UiIntentRequest)
    async def on_ui_intent(self, msg: UiIntentRequest, env: Envelope) -> InstanceReply:
        asks = msg.intent == "close" and not msg.force
        if asks and await self._asked_to_close(msg.instance_id):
            return self.lifecycle.reply(msg.instance_id)  # the app decides, and closes it
        await self.lifecycle.change(
            msg.instance_id, "foreground" if msg.intent == "focus" else "close"
        )
        if msg.intent == "close":
            return InstanceReply(
                instance_id=msg.instance_id,
                app_scope=self.instances.scope_of(msg.instance_id) or "",
                state="stopped",
            )
        return self.lifecycle.reply(msg.instance_id)

    async def _asked_to_close(self, instance_id: str) -> bool:
        """The user's close of an instance whose app asks first (`CLOSE_REQUESTS_FEATURE`):
        its running process is told `app.close_requested` instead. False (close it now) for
        any other app, an instance with no process (suspended), or an app not reached."""
        scope = self.instances.live_scope(instance_id)
        if scope is None or self.instances.state_of(instance_id) == "suspended":
            return False
        manifest = self.book.manifest(scope)
        if manifest is None:
            return False
        features = (
            *manifest.runtime_sdk.optional_features,
            *manifest.runtime_sdk.required_features,
        )
        if CLOSE_REQUESTS_FEATURE not in features:
            return False
        asked = sdk.UiEvent(instance_id=instance_id, event={"kind": sdk.UI_CLOSE_REQUESTED})
        return await self.bus.tell(f"miniapp:{scope}", asked, timeout=NOTIFY_TIMEOUT) is None

    # ------------------------------------------------------------------ session data

    @handles(sdk.SessionDataGetRequest)
    async def on_session_get(
        self, msg: sdk.SessionDataGetRequest, env: Envelope
    ) -> sdk.SessionDataSnapshot:
        return await self.sessions.get(msg, env)

    @handles(sdk.SessionDataSubscribeRequest)
    async def on_session_subscribe(
        self, msg: sdk.SessionDataSubscribeRequest, env: Envelope
    ) -> sdk.SessionDataSnapshot:
        return await self.sessions.subscribe(msg, env)

    @handles(sdk.SessionDataReplaceRequest)
    async def on_session_replace(
        self, msg: sdk.SessionDataReplaceRequest, env: Envelope
    ) -> sdk.CommandReceipt:
        return await self.sessions.replace(msg, env)

    # ------------------------------------------------------------------ views and the Shell

    @handles(sdk.ViewUpdateRequest)
    def on_view_update(self, msg: sdk.ViewUpdateRequest, env: Envelope) -> sdk.CommandReceipt:
        return self.views.update(msg, env)

    @handles(sdk.ViewItemsPutRequest)
    def on_view_items(
        self, msg: sdk.ViewItemsPutRequest, env: Envelope
    ) -> sdk.CommandReceipt | Awaitable[sdk.CommandReceipt]:
        return self.views.put_items(msg, env)

    @handles(ViewsRequest)
    def on_views(self, msg: ViewsRequest, env: Envelope) -> ViewsReply:
        return self.views.views(msg)

    @handles(ViewItemsPageRequest)
    def on_view_items_page(self, msg: ViewItemsPageRequest, env: Envelope) -> ViewItemsPageReply:
        return self.views.items_page(msg)

    @handles(UiEventRequest)
    async def on_ui_event(self, msg: UiEventRequest, env: Envelope) -> UiEventAccepted:
        scope = self.instances.live_scope(msg.instance_id)
        if scope is None:
            raise LineUpError(ErrorCode.APP_INSTANCE_NOT_FOUND, msg.instance_id)
        await self.bus.notify(
            f"miniapp:{scope}",
            sdk.UiEvent(instance_id=msg.instance_id, event=msg.event),
            timeout=NOTIFY_TIMEOUT,
        )
        return UiEventAccepted(instance_id=msg.instance_id)

    # ------------------------------------------------------------------ surfaces

    @handles(sdk.SurfaceOpenRequest)
    def on_surface_open(self, msg: sdk.SurfaceOpenRequest, env: Envelope) -> sdk.SurfaceReply:
        return self.surfaces.open(msg, env)

    @handles(sdk.SurfaceUpdateRequest)
    def on_surface_update(self, msg: sdk.SurfaceUpdateRequest, env: Envelope) -> sdk.SurfaceReply:
        return self.surfaces.update(msg, env)

    @handles(sdk.SurfaceCloseRequest)
    def on_surface_close(self, msg: sdk.SurfaceCloseRequest, env: Envelope) -> sdk.SurfaceReply:
        return self.surfaces.close(msg, env)

    @handles(SurfaceToolStepRequest)
    def on_surface_tool_step(
        self, msg: SurfaceToolStepRequest, env: Envelope
    ) -> SurfaceToolStepReply:
        return self.surface_tools.step(msg)

    @handles(SurfaceToolCallRequest)
    async def on_surface_tool_call(
        self, msg: SurfaceToolCallRequest, env: Envelope
    ) -> SurfaceToolCallReply:
        return await self.surface_tools.call(msg, env)

    @handles(sdk.UiToolCallDoneRequest)
    async def on_surface_tool_done(
        self, msg: sdk.UiToolCallDoneRequest, env: Envelope
    ) -> sdk.CommandReceipt:
        return self.surface_tools.done(msg, env)

    @handles(SurfaceResourceReadRequest)
    async def on_surface_resource_read(
        self, msg: SurfaceResourceReadRequest, env: Envelope
    ) -> SurfaceResourceReadReply:
        return await self.surface_tools.read(msg, env)

    @handles(sdk.UiResourceReadDoneRequest)
    async def on_surface_resource_done(
        self, msg: sdk.UiResourceReadDoneRequest, env: Envelope
    ) -> sdk.CommandReceipt:
        return self.surface_tools.read_done(msg, env)

    @handles(sdk.UiToolProgressRequest)
    async def on_surface_tool_progress(
        self, msg: sdk.UiToolProgressRequest, env: Envelope
    ) -> sdk.CommandReceipt:
        return await self.surface_tools.progress(msg, env)

    @handles(SurfaceAssetsRequest)
    def on_surface_assets(self, msg: SurfaceAssetsRequest, env: Envelope) -> SurfaceAssetsReply:
        return self.surfaces.assets(msg, env)

    @handles(SurfaceEventRequest)
    async def on_surface_event(self, msg: SurfaceEventRequest, env: Envelope) -> SurfaceAccepted:
        return await self.surfaces.event(msg, env)

    @handles(SurfaceSessionDataRequest)
    async def on_surface_session_data(
        self, msg: SurfaceSessionDataRequest, env: Envelope
    ) -> SurfaceAccepted:
        return await self.surfaces.session_data(msg, env)
