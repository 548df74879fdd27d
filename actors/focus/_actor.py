"""The focus actor: the registry, instances, the focus stack, and views (DESIGN §1, §5).

Theory of operation
-------------------
*Registry.* The bundled MiniApps (`lineup.miniapps.catalogue`) and any configured ones are
what this runtime offers. Their manifests are read from their packages (the runtime never
imports a MiniApp's code, only its manifest) and recorded in the store with their enabled
flag. The inventory is every enabled app's tools; its revision changes exactly when that set
does, to a new and higher one even when the content is one seen before (the store's counter
keeps a content's revision only while it is the current one), and the router is told.

*Instances.* Each change of an instance's state or of the stack is persisted before anyone is
told, so after a restart focus rebuilds both from the store: instances caught `starting` or
`stopping` come back `suspended`, never as done. After a restart of the whole runtime no MiniApp
process runs, so every app instance left open is `suspended` (seed 004 §4.4): it keeps its tab,
never the front, and is resumed when the user brings it forward or a call names it (its process
starts, the app restores it from session data), or it is closed. An app's process runs while it
has a live instance; focus asks the supervisor to start or stop it (the only program it may name
is the SDK's host). Closing an instance restores the previous live instance (the recovery app is
`chat`) and, once that is persisted, tells the router (`router.instance.event`), which converges
the instance's unfinished calls to `cancelled(app_closed)`; focus never waits on the router.
Focus tells the router when it starts, too (`router.instance.recovered`): an `ended` event lost
with a focus that died right after persisting is then made up by the router's sweep.

What an instance change decides is `Instances` (`_instances.py`, no I/O): it takes each change
as one commit and says, once the actor has written it, what it does (announce to the router,
ask an app for its view, push the Shell's app list); the actor carries those effects out.

*Views, Surfaces, session data* are services of their own (`_view_service`,
`_surface_service`, `_session_data`): the handlers stay here and delegate; the services read
the instances through `Instances` and reach the nursery through the callables they get.
"""

from __future__ import annotations

import logging
import secrets
from typing import Any, Final, Literal, cast

import trio

from lineup.actors.kernel import (
    Actor,
    ActorKind,
    AuditRecord,
    Envelope,
    ErrorCode,
    LineUpError,
    Message,
    app_scope_of,
    handles,
)
from lineup.actors.kernel.control import (
    AppFailedEvent,
    ChildStartReply,
    ChildStartRequest,
    ChildStopReply,
    ChildStopRequest,
)
from lineup.actors.router.messages import (
    InstanceEvent,
    InstancesRecoveredEvent,
    InventoryChangedEvent,
)
from lineup.actors.store.messages import (
    MAX_FOCUS_STACK,
    AppRegistryListReply,
    AppRegistryListRequest,
    AppRegistryPutReply,
    AppRegistryPutRequest,
    CapabilityGrantListReply,
    CapabilityGrantListRequest,
    FocusStackGetReply,
    FocusStackGetRequest,
    InstanceCommitReply,
    InstanceCommitRequest,
    InstanceListReply,
    InstanceListRequest,
    InstanceMove,
    InstanceRecoverReply,
    InstanceRecoverRequest,
    InstanceState,
    InstanceTransitionReply,
    InstanceTransitionRequest,
    InstanceUpsertRequest,
    InventoryRevisionBumpReply,
    InventoryRevisionBumpRequest,
    SettingGetReply,
    SettingGetRequest,
)
from lineup.facts.scopes import CHAT
from lineup.hostbridge.messages import (
    AppsUpdatedEvent,
)
from lineup.miniapps import catalogue
from lineup.sdk import protocol as sdk
from lineup.sdk.manifest import load_manifest

from ._app_book import AppBook, AppEntry
from ._capability_context import CapabilityFacts, context_of
from ._dev_reload import DevReload
from ._instances import Announce, Commit, Effect, Instances, PushApps, RefreshView
from ._inventory import Inventory
from ._registry import DEFAULT_APP, RegistryService
from ._session_data import SessionData
from ._start import StartTargets
from ._surface_service import SurfaceService
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
    SurfaceSessionDataRequest,
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

NOTIFY_TIMEOUT: Final = 5.0
STORE_TIMEOUT: Final = 30.0
START_TIMEOUT: Final = 20.0
# Live instances one MiniApp may hold open through `apps.open`: a loop of opens is refused
# here, long before the focus stack (MAX_FOCUS_STACK) is full for the Agent's launches.
MAX_OPENED_PER_APP: Final = 8


class FocusActor(Actor):
    kind = ActorKind.FOCUS

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # The apps this runtime offers: the shipped ones (unless a test or bench leaves them
        # out), then the configured ones (a configured one replaces a shipped one of its
        # scope); their manifests are read at start, and the registry adds the installed ones.
        bundled = catalogue.registry_entries() if self.ctx.config.get("bundled_apps", True) else []
        self.book = AppBook()
        for app in [*bundled, *self.ctx.config.get("apps", [])]:
            self.book.put(AppEntry.configured(app))
        self.instances = Instances()
        # The catalogue's own apps (not one a configuration replaced): they alone draw with
        # the Shell's trusted components. The chat is the tree's own, whatever is configured.
        configured = {str(app["app_scope"]) for app in self.ctx.config.get("apps", [])}
        shipped = {str(app["app_scope"]) for app in bundled} - configured
        self._views = ViewBook(frozenset(shipped | {CHAT}))
        self._nursery: trio.Nursery | None = None  # while `run` runs
        self._lock = trio.Lock()  # one change of instances/stack at a time
        self._inventory_lock = trio.Lock()
        # The Agent's tools: a tool whose app cannot use a capability it declares is left out.
        self.inventory = Inventory(self.book, CapabilityFacts(self.ctx.config.get("capabilities")))
        # Surfaces (one per instance at most), session data (one write path, whoever writes)
        # and views: services of their own, which the handlers delegate to. `_surfaces` and
        # `_views` are their pure books, `surfaces` and `views` the services.
        self._surfaces = SurfaceBook()
        self.sessions = SessionData(self.bus, self._surfaces, self._session_of)
        self.surfaces = SurfaceService(
            self.bus,
            self.ctx.identity,
            self._surfaces,
            self.sessions,
            live_owned=self._live_owned,
            instances=self.instances,
            book=self.book,
            show=self._show,
            soon=self._nursery_soon,
            tell_app=self._tell_app,
        )
        self.views = ViewService(
            self.bus,
            self.ctx.identity,
            self._views,
            self.surfaces,
            book=self.book,
            instances=self.instances,
            live_owned=self._live_owned,
            apps=self._apps,
            soon=self._nursery_soon,
            tell_app=self._tell_app,
        )
        # Installs and every operation on an app (`_registry`): it keeps the installed apps
        # in the same book the handlers read.
        self.registry = RegistryService(
            self.ctx.data_dir,
            self.ctx.config,
            store=self._store,
            book=self.book,
            live_of=self.instances.live_of,
            close=self._close,
            publish=self._publish_inventory,
        )
        # Reload on save of the development apps (`lineup run --dev-app`).
        self.dev_reload = DevReload(
            self.bus,
            book=self.book,
            store=self._store,
            running=self.instances.running,
            start=self._ensure_running,
            publish=self._publish_inventory,
            revision=lambda: self.inventory.revision,
            tell_app=self._tell_app,
        )
        # The start target (seed 004 §4.3): the user's deep link, else what can be restored,
        # else the default app, else the chat.
        self.starts = StartTargets(
            recovery_scope=CHAT,
            recovery_instance=CHAT,
            topmost=self.instances.topmost,
            require_enabled=self._require_enabled,
            foreground=self._bring_forward,
            launch=lambda scope, call_id: self._launch(
                LaunchRequest(app_scope=scope, call_id=call_id)
            ),
            tell_app=lambda scope, event: self._nursery_soon(self._tell_app, scope, event),
        )

    # ------------------------------------------------------------------ start-up

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        await self._load_registry()
        await self._recover()
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            task_status.started()
            for scope in self.instances.scopes_up():
                nursery.start_soon(self._tell_app, scope, sdk.ViewRefreshEvent())
            nursery.start_soon(self._push_apps)
            nursery.start_soon(self._tell_router, InstancesRecoveredEvent())
            nursery.start_soon(self._apply_start_target)
            try:
                await trio.sleep_forever()
            finally:
                # Shutting down: what a request still being answered would start in the
                # background (a push, a tell) has nowhere to run, and is dropped.
                self._nursery = None

    async def _apply_start_target(self) -> None:
        front = self.instances.front()
        await self.starts.at_start(
            focus_restarted=self.ctx.incarnation > 1,
            front=None if front is None else (front, self.instances.owners()[front]),
            default=self._default_app,
        )

    async def _default_app(self) -> str | None:
        reply = await self._store(SettingGetRequest(name=DEFAULT_APP), SettingGetReply)
        return reply.value if isinstance(reply.value, str) else None

    async def _store(self, request: Message, expect: type[Any]) -> Any:
        return await self.bus.request(
            "store", request, expect=expect, timeout=STORE_TIMEOUT, retry=True
        )

    async def _load_registry(self) -> None:
        for app in self.book:
            scope = app.scope
            if scope == CHAT:
                continue
            raw = await trio.Path(app.manifest_file).read_bytes()
            manifest = load_manifest(raw)
            try:
                await self._store(
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
            self.book.change(scope, manifest=manifest)
        rows = await self._store(AppRegistryListRequest(), AppRegistryListReply)
        for row in rows.apps:
            if row.app_scope in self.book:
                self.book.change(row.app_scope, enabled=row.enabled)
        await self.registry.load()  # the installed apps, from their verified cache
        self.inventory.capabilities.read(
            await self._store(CapabilityGrantListRequest(), CapabilityGrantListReply)
        )
        await self._bump_inventory()

    async def _bump_inventory(self) -> bool:
        """Give the inventory's current content a revision (a new one only if it changed)."""
        reply = await self._store(
            InventoryRevisionBumpRequest(reason="inventory", bump_id=self.inventory.bump_id()),
            InventoryRevisionBumpReply,
        )
        return self.inventory.revised(reply.revision)

    async def _recover(self) -> None:
        await self._store(InstanceRecoverRequest(), InstanceRecoverReply)
        rows = await self._store(InstanceListRequest(), InstanceListReply)
        stack = await self._store(FocusStackGetRequest(), FocusStackGetReply)
        # A first incarnation is a (re)start of the whole runtime, so no MiniApp process runs:
        # every app instance left open is suspended until the user or a call resumes it. (A
        # focus restarted alone finds the processes running and asks them for their views.)
        self.instances.recover(
            ((row.instance_id, row.app_scope, row.state) for row in rows.instances),
            stack.instance_ids,
            runtime_restarted=self.ctx.incarnation == 1,
        )
        await self._persist()

    # ------------------------------------------------------------------ persistence

    async def _persist(self) -> None:
        """Write one change of focus (`Instances.commit`: the instance it creates, the moves
        since the last write, the stack after them) as ONE store request (one transaction),
        then carry out what those moves do. Nothing is told before it is written."""
        commit = self.instances.commit()
        try:
            await self._store(_commit_request(commit), InstanceCommitReply)
        except BaseException:
            self.instances.rewind(commit)  # not written: it is still to be written
            raise
        for effect in self.instances.effects(commit):
            self._carry_out(effect)

    def _carry_out(self, effect: Effect) -> None:
        if isinstance(effect, Announce):
            event = InstanceEvent(
                instance_id=effect.instance_id, app_scope=effect.app_scope, event=effect.event
            )
            self._nursery_soon(self._tell_router, event)
        elif isinstance(effect, RefreshView):
            self._nursery_soon(self._tell_app, effect.app_scope, sdk.ViewRefreshEvent())
        elif isinstance(effect, PushApps):
            self._nursery_soon(self._push_apps)

    def _nursery_soon(self, fn: Any, *args: Any) -> None:
        nursery = self._nursery
        if nursery is not None:
            nursery.start_soon(fn, *args)

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

    async def _publish_inventory(self) -> None:
        """After every change of the registry (`_registry`: install, enable, disable, update,
        rollback, revoke, remove): a new inventory revision if the tools changed, and the
        Shells' launcher again (an app without tools changes only that)."""
        self._nursery_soon(self._push_apps)
        async with self._inventory_lock:
            await self._republish()

    async def _republish(self) -> None:
        """A new inventory revision if the tools changed, and the router told. The caller
        holds `_inventory_lock`: one bump at a time, so the revision last set is the one for
        the content last seen."""
        if await self._bump_inventory():
            changed = InventoryChangedEvent(revision=self.inventory.revision)
            self._nursery_soon(self._tell_router, changed)

    @handles(DevAppReloadRequest)
    async def on_dev_app_reload(self, msg: DevAppReloadRequest, env: Envelope) -> DevAppReloadReply:
        return await self.dev_reload.reload(msg)

    @handles(DevAppRefusedEvent)
    async def on_dev_app_refused(self, msg: DevAppRefusedEvent, env: Envelope) -> None:
        await self.dev_reload.refused(msg)

    @handles(RegistryInstallRequest)
    async def on_registry_install(
        self, msg: RegistryInstallRequest, env: Envelope
    ) -> AppOperationInfo:
        return await self.registry.install(msg)

    @handles(RegistryInspectRequest)
    async def on_registry_inspect(
        self, msg: RegistryInspectRequest, env: Envelope
    ) -> RegistryInspectReply:
        return await self.registry.inspect(msg)

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
        return context_of(
            msg,
            instances=self.instances,
            book=self.book,
        )

    @handles(CapabilitiesChangedEvent)
    async def on_capabilities_changed(self, msg: CapabilitiesChangedEvent, env: Envelope) -> None:
        async with self._inventory_lock:  # the grants read and the bump in one order
            self.inventory.capabilities.read(
                await self._store(CapabilityGrantListRequest(), CapabilityGrantListReply)
            )
            await self._republish()

    async def _tell_router(self, event: Message) -> None:
        # Not told: the router publishes the inventory when it starts.
        code = await self.bus.tell("router", event, timeout=NOTIFY_TIMEOUT)
        if code is not None:
            log.warning("focus.router_not_told type=%s code=%s", event.TYPE, code.value)

    # ------------------------------------------------------------------ instances

    @handles(LaunchRequest)
    async def on_launch(self, msg: LaunchRequest, env: Envelope) -> InstanceReply:
        return await self._launch(msg)

    async def _launch(self, msg: LaunchRequest, *, opener: str | None = None) -> InstanceReply:
        """Open (or find) the instance a launch names; `opener` is the MiniApp whose
        `apps.open` asks, held to MAX_OPENED_PER_APP live instances (the Agent is not)."""
        self._require_enabled(msg.app_scope)
        instance_id = f"{msg.app_scope}:{msg.call_id}"[:200]
        async with self._lock:
            if not self.instances.is_live(instance_id):
                if opener is not None:
                    self._check_open_quota(opener)
                if self.instances.count_live() >= MAX_FOCUS_STACK:
                    # Refused before anything changes: the stack the store keeps is bounded,
                    # and an instance only in memory would be half-launched.
                    raise LineUpError(
                        ErrorCode.LIFECYCLE_DENIED,
                        f"{MAX_FOCUS_STACK} instances are open; close one first",
                    )
                self.instances.launch(
                    instance_id, msg.app_scope, foreground=msg.foreground, call_id=msg.call_id
                )
                try:
                    await self._persist()
                except BaseException:
                    # Not written: the instance exists nowhere, so not in memory either.
                    self.instances.forget(instance_id)
                    raise
        try:
            await self._ensure_running(instance_id)
        except (LineUpError, trio.TooSlowError) as exc:
            # Its app never came up: the instance fails (its held calls end activation_failed).
            log.warning("focus.start_failed instance=%s", instance_id)
            if self.instances.is_live(instance_id):
                await self._end(instance_id, msg.app_scope, "failed")
            raise LineUpError(ErrorCode.ACTIVATION_FAILED, instance_id) from exc
        async with self._lock:
            if not self.instances.is_live(instance_id):
                # Closed while it was starting: the start is cancelled.
                raise LineUpError(ErrorCode.ACTIVATION_CANCELLED, instance_id)
            state = self.instances.state_of(instance_id)
            if state == "starting":
                self.instances.ready(instance_id)
                await self._persist()
            elif state == "suspended" or msg.foreground:
                self.instances.resume(instance_id, foreground=msg.foreground)
                await self._persist()
        return self._reply(instance_id)

    def _check_open_quota(self, opener: str) -> None:
        """Refuse (and audit) an `apps.open` from `opener` past its quota of live instances.
        Counted from the instance ids (`<scope>:nav-<opener>-<request id>`), so the count
        survives a restart of focus."""
        if self.instances.count_live(marked=f"nav-{opener}-") < MAX_OPENED_PER_APP:
            return
        self.bus.audit_refusal(  # a loop of opens writes a few rows, then a counter row
            AuditRecord(
                event="focus.open_quota_exceeded",
                actor=self.ctx.identity.name,
                peer=f"miniapp:{opener}",
                code=ErrorCode.QUOTA_EXCEEDED.value,
                message_type=sdk.AppOpenRequest.TYPE,
            )
        )
        raise LineUpError(
            ErrorCode.QUOTA_EXCEEDED,
            f"{MAX_OPENED_PER_APP} instances opened by this app are live; close one first",
        )

    @handles(sdk.AppOpenRequest)
    async def on_app_open(self, msg: sdk.AppOpenRequest, env: Envelope) -> sdk.AppOpenReply:
        """A MiniApp's navigation request: the same decision and path as an Agent's launch,
        keyed by the asking app and its request id so a retry opens nothing new."""
        asker = app_scope_of(env.sender)
        launch = LaunchRequest(
            app_scope=msg.app_scope, call_id=f"nav-{asker}-{msg.request_id}"[:200]
        )
        launched = await self._launch(launch, opener=asker)
        return sdk.AppOpenReply(instance_id=launched.instance_id, app_scope=launched.app_scope)

    @handles(FindInstanceRequest)
    async def on_find(self, msg: FindInstanceRequest, env: Envelope) -> InstanceReply:
        self._require_enabled(msg.app_scope)
        instance_id = msg.instance_id or self.instances.newest(msg.app_scope)
        if instance_id is None or self.instances.live_scope(instance_id) != msg.app_scope:
            raise LineUpError(ErrorCode.APP_INSTANCE_NOT_FOUND, msg.instance_id or msg.app_scope)
        if self.instances.state_of(instance_id) == "suspended" or msg.foreground:
            # A call for a suspended instance resumes it: its process starts, and the app
            # restores the instance from its session data.
            await self._resume(instance_id, foreground=msg.foreground)
        return self._reply(instance_id)

    async def _resume(self, instance_id: str, *, foreground: bool) -> None:
        """Run the instance's process, then put it back in play (on top with `foreground`).
        A suspended one is asked for its view (the Shell has none): the machine's effect."""
        await self._ensure_running(instance_id)
        async with self._lock:
            self.instances.resume(instance_id, foreground=foreground)
            await self._persist()

    def _reply(self, instance_id: str) -> InstanceReply:
        state = self.instances.state_of(instance_id)
        assert state is not None  # asked only of an instance just found or changed
        return InstanceReply(
            instance_id=instance_id, app_scope=self.instances.owners()[instance_id], state=state
        )

    def _require_enabled(self, app_scope: str) -> None:
        refused = self.book.refusal(app_scope)  # incompatible, unavailable
        if refused is not None:
            raise LineUpError(refused, app_scope)
        if self.book.manifest(app_scope) is None:
            raise LineUpError(ErrorCode.APP_NOT_INSTALLED, app_scope)
        if not self.book.enabled(app_scope):
            raise LineUpError(ErrorCode.APP_DISABLED, app_scope)

    async def _ensure_running(self, instance_id: str) -> None:
        scope = self.instances.owners()[instance_id]
        if scope == CHAT:
            return
        await self.registry.check_launch(scope)  # an installed app's cache verifies again
        app = self.book.get(scope)
        if app is None:  # removed since the instance was opened
            raise LineUpError(ErrorCode.APP_NOT_INSTALLED, scope)
        manifest = self.book.manifest(scope)
        with trio.fail_after(START_TIMEOUT):
            await self.bus.request(
                "supervisor",
                ChildStartRequest(
                    name=f"miniapp:{scope}",
                    config={
                        "app": app.entry,
                        "instance_id": instance_id,
                        "app_version": manifest.version if manifest else "",  # its SDK context's
                        "app_path": app.app_path,  # a development app's folder
                    },
                ),
                expect=ChildStartReply,
                timeout=START_TIMEOUT,
            )

    async def _close(self, instance_id: str) -> None:
        """Close one instance: its calls converge, focus goes back, its process may stop."""
        scope = self.instances.live_scope(instance_id)
        if scope is None:
            raise LineUpError(ErrorCode.APP_INSTANCE_NOT_FOUND, instance_id)
        if instance_id == CHAT:
            raise LineUpError(ErrorCode.LIFECYCLE_DENIED, "the recovery app stays")
        async with self._lock:
            await self._store(
                InstanceTransitionRequest(instance_id=instance_id, to_state="stopping"),
                InstanceTransitionReply,
            )
        if not await self._end(instance_id, scope, "stopped"):
            await self.bus.request(
                "supervisor",
                ChildStopRequest(name=f"miniapp:{scope}"),
                expect=ChildStopReply,
                timeout=START_TIMEOUT,
            )
        self._nursery_soon(self._push_apps)

    @handles(AppFailedEvent)
    async def on_app_failed(self, msg: AppFailedEvent, env: Envelope) -> None:
        """The supervisor stopped the app for misbehaving: its live instances fail, their
        unfinished calls end, and focus goes back to the previous live instance."""
        for instance_id in self.instances.live_of(msg.app_scope):
            await self._end(instance_id, msg.app_scope, "failed")
        self._nursery_soon(self._push_apps)

    async def _end(
        self, instance_id: str, scope: str, state: Literal["stopped", "failed"]
    ) -> list[str]:
        """End an instance: it leaves the stack in `state`, in the store first, then the router
        is told (`ended` / `failed`) and converges its unfinished calls — an event, so focus
        never waits on the router; a router that missed it converges the calls of every ended
        instance when it starts. Returns the scope's instances still live, read under the same
        lock as the removal."""
        return await self._remove(instance_id, scope, state)

    async def _remove(
        self, instance_id: str, scope: str, state: Literal["stopped", "failed"]
    ) -> list[str]:
        async with self._lock:
            self.instances.remove(instance_id, state)
            await self._persist()
            self.views.drop(instance_id)
            self.surfaces.drop(scope, instance_id)
            return self.instances.live_of(scope)

    @handles(sdk.LifecycleRequest)
    async def on_lifecycle(self, msg: sdk.LifecycleRequest, env: Envelope) -> sdk.CommandReceipt:
        self._owned(env, msg.instance_id)
        await self._change(msg.instance_id, msg.action)
        return sdk.CommandReceipt(id=msg.instance_id)

    @handles(UiOpenRequest)
    async def on_ui_open(self, msg: UiOpenRequest, env: Envelope) -> InstanceReply:
        return await self.starts.open(msg.app_scope)

    async def _bring_forward(self, instance_id: str) -> InstanceReply:
        await self._change(instance_id, "foreground")
        return self._reply(instance_id)

    @handles(UiIntentRequest)
    async def on_ui_intent(self, msg: UiIntentRequest, env: Envelope) -> InstanceReply:
        await self._change(msg.instance_id, "foreground" if msg.intent == "focus" else "close")
        if msg.intent == "close":
            return InstanceReply(
                instance_id=msg.instance_id,
                app_scope=self.instances.scope_of(msg.instance_id) or "",
                state="stopped",
            )
        return self._reply(msg.instance_id)

    async def _change(self, instance_id: str, action: str) -> None:
        if action == "close":
            await self._close(instance_id)
            return
        if not self.instances.is_live(instance_id):
            raise LineUpError(ErrorCode.APP_INSTANCE_NOT_FOUND, instance_id)
        if self.instances.state_of(instance_id) == "suspended":
            # The user (or the app) brings it back: its process starts first.
            await self._resume(instance_id, foreground=action == "foreground")
            if action == "foreground":
                return
        async with self._lock:
            if action == "foreground":
                self.instances.bring_forward(instance_id)
            else:
                self.instances.send_back(instance_id)
            await self._persist()

    # ------------------------------------------------------------------ session data

    def _owned(self, env: Envelope, instance_id: str) -> str:
        """The sending MiniApp's scope, if `instance_id` is one of its instances."""
        scope = app_scope_of(env.sender)
        owner = self.instances.scope_of(instance_id)
        if owner is None:
            # Ended before this focus started (it keeps only live ones), or never existed.
            raise LineUpError(ErrorCode.APP_INSTANCE_NOT_FOUND, instance_id)
        if owner != scope:
            # Another app's instance: untrusted code asked, so it is audited.
            self.bus.audit(
                AuditRecord.scope_denied(
                    self.ctx.identity.name, env.sender.name, env.body.TYPE, instance_id
                )
            )
            raise LineUpError(ErrorCode.APP_SCOPE_MISMATCH, instance_id)
        return scope

    def _session_of(self, env: Envelope, instance_id: str) -> tuple[str, str]:
        """The session of one of the sender's live instances (a session is named after it).
        An instance that has ended has none: its data stays for the record, but nobody reads
        or writes it any more (`app_instance_not_found`)."""
        return self._live_owned(env, instance_id), instance_id

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

    async def _tell_app(self, app_scope: str, event: Message) -> None:
        code = await self.bus.tell(f"miniapp:{app_scope}", event, timeout=NOTIFY_TIMEOUT)
        if code is not None:
            log.info("focus.app_not_told app=%s code=%s", app_scope, code.value)

    def _apps(self) -> AppsUpdatedEvent:
        foreground, live = self.instances.listing()
        return AppsUpdatedEvent(
            foreground=foreground,
            instances=tuple(
                {
                    "instance_id": instance_id,
                    "app_scope": scope,
                    "state": state,
                    "title": self.book.title(scope),
                }
                for instance_id, scope, state in live
            ),
            launchable=tuple(self._launchable()),
        )

    def _launchable(self) -> list[dict[str, str]]:
        """The apps the Shell's launcher offers: each that an open would start now (usable,
        enabled; not the chat, which is always there), by title, then scope."""
        titled = [
            (self.book.title(scope), scope)
            for scope in self.book.manifests()  # the usable ones
            if scope != CHAT and self.book.enabled(scope)
        ]
        return [
            {"app_scope": scope, "title": title}
            for title, scope in sorted(titled, key=lambda t: (t[0].casefold(), t[1]))
        ]

    async def _push_apps(self) -> None:
        # Not told: the Shell asks when it (re)connects.
        await self.bus.tell("hostbridge", self._apps(), timeout=NOTIFY_TIMEOUT)

    @handles(sdk.ViewUpdateRequest)
    def on_view_update(self, msg: sdk.ViewUpdateRequest, env: Envelope) -> sdk.CommandReceipt:
        return self.views.update(msg, env)

    @handles(sdk.ViewItemsPutRequest)
    def on_view_items(self, msg: sdk.ViewItemsPutRequest, env: Envelope) -> sdk.CommandReceipt:
        return self.views.put_items(msg, env)

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

    # ------------------------------------------------------------------ views and the Shell

    def _live_owned(self, env: Envelope, instance_id: str) -> str:
        scope = self._owned(env, instance_id)
        if not self.instances.is_live(instance_id):
            raise LineUpError(ErrorCode.APP_INSTANCE_NOT_FOUND, instance_id)
        return scope

    def _show(self, scope: str, instance_id: str, view: dict[str, Any]) -> None:
        # The Surfaces' way to the views (made after them, so looked up when called).
        self.views.show(scope, instance_id, view)

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


def _commit_request(commit: Commit) -> InstanceCommitRequest:
    born = commit.born
    return InstanceCommitRequest(
        born=None
        if born is None
        else InstanceUpsertRequest(
            instance_id=born.instance_id,
            app_scope=born.app_scope,
            state="starting",
            app_session_id=born.instance_id,  # a sub-session is named after its instance
            created_by_call_id=born.call_id,
        ),
        moves=tuple(
            InstanceMove(instance_id=i, to_state=cast(InstanceState, after))
            for i, (_, after) in commit.moves.items()
        ),
        stack=commit.stack,
    )
