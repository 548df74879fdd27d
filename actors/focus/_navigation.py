"""Navigation between apps and the declarative actions (seed 004 §6.2), decided by focus for an
app's SDK (`focus.sdk.apps.*`, `focus.sdk.actions.dispatch`) and for its Surface
(`focus.ui.surface.app`, the same decisions for the Surface's own app and instance).

Theory of operation
-------------------
Every request comes from one instance of the asking app (`asker`, `from_instance`: the SDK's
is checked to be the sender's live instance; a Surface's is the instance whose Surface it is).
The checks, in order, each with its code (`lineup.sdk._protocol.navigation` lists them):

    launch        the conversation (the runtime's current one, or none named), the target app
                  (installed, enabled, compatible: `Access.require_enabled`), its entrypoint
                  (declared), the display mode (a Surface entrypoint this host runs; a
                  `foreground` launch only from an instance in front), the asker's quota
    focus         a live instance that is the asker's, one it launched, or the chat; any
                  other app's is `app_scope_mismatch` (audited); another app's only from an
                  instance in front
    close         the asker's or one it launched, never the chat
    open_default  from an instance in front: the user's default app, else the chat

A launch's instance is named `<app>:nav-<asker>-<request id>` (as `apps.open` names its), so a
retry finds it and the instances an app launched are known from their ids after any restart.
A launched instance that no call will show is told `app.opened`, as the Shell's opens do.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Final

from pydantic import TypeAdapter, ValidationError

from lineup.actors.kernel import AuditRecord, Envelope, ErrorCode, LineUpError
from lineup.actors.store.messages import CursorGetReply, CursorGetRequest
from lineup.actors.transport.messages import session_of
from lineup.facts.link import SESSION_CURSOR
from lineup.facts.scopes import CHAT
from lineup.sdk import protocol as sdk
from lineup.sdk.manifest import (
    CORE_KINDS,
    SURFACE_KIND,
    SURFACE_VERSIONS,
    Entrypoint,
    Manifest,
)

from ._access import Access
from ._app_state import AppState, Lineage, launched_by
from ._capability_context import CapabilityFacts
from ._lifecycle import Lifecycle
from ._port import Port
from ._start import StartTargets
from ._surfaces import SurfaceBook
from .messages import (
    InstanceContextReply,
    InstanceContextRequest,
    LaunchRequest,
    SurfaceAppReply,
    SurfaceAppRequest,
)

__all__ = ["CORE_KINDS", "Navigation"]

# Every runtime action is one a Surface may dispatch (`sdk.SURFACE_ACTION_KINDS`): the
# conversation's are not runtime actions at all.
_SURFACE_ACTION: Final[TypeAdapter[sdk.RuntimeAction]] = TypeAdapter(sdk.RuntimeAction)


class Navigation:
    """Focus's navigation and actions (the module's docstring)."""

    def __init__(
        self,
        port: Port,
        access: Access,
        lifecycle: Lifecycle,
        starts: StartTargets,
        state: AppState,
        lineage: Lineage,
        surfaces: SurfaceBook,
        capabilities: CapabilityFacts,
        default_app: Callable[[], Awaitable[str | None]],
    ) -> None:
        self._port = port
        self._access = access
        self._book = access.book
        self._instances = access.instances
        self._lifecycle = lifecycle
        self._starts = starts
        self._state = state
        self._lineage = lineage
        self._surfaces = surfaces
        self._capabilities = capabilities
        self._default_app = default_app

    # ------------------------------------------------------------------ who asks

    def asking(self, env: Envelope, from_instance: str) -> str:
        """The sending app, if `from_instance` is its live instance."""
        return self._access.live_owned(env, from_instance)

    def _in_front(self, from_instance: str) -> None:
        if self._instances.state_of(from_instance) != "foreground":
            raise LineUpError(ErrorCode.FOREGROUND_REQUIRED, from_instance)

    def _denied(self, asker: str, message_type: str, instance_id: str) -> LineUpError:
        """Another app's instance: refused and audited (untrusted code asked)."""
        self._port.bus.audit(
            AuditRecord.scope_denied(
                self._port.me.name, f"miniapp:{asker}", message_type, instance_id
            )
        )
        return LineUpError(ErrorCode.APP_SCOPE_MISMATCH, instance_id)

    # ------------------------------------------------------------------ reading

    def list_available(self) -> sdk.AppsListAvailableReply:
        """Every app an open would start now (usable, enabled), the chat first."""
        apps = [sdk.AppSummary(app_scope=CHAT, title=self._book.title(CHAT, "Chat"), kind="core")]
        for scope, manifest in sorted(self._book.manifests().items()):
            if scope == CHAT or not self._book.enabled(scope):
                continue
            apps.append(
                sdk.AppSummary(
                    app_scope=scope,
                    title=self._book.title(scope),
                    kind="core" if manifest.kind in CORE_KINDS else "installed",
                    entrypoints=tuple(
                        sdk.EntrypointSummary(
                            id=e.id, kind=e.kind, default_eligible=e.default_eligible
                        )
                        for e in manifest.entrypoints
                    ),
                )
            )
        return sdk.AppsListAvailableReply(apps=tuple(apps))

    async def list_with_default(self) -> sdk.AppsListAvailableReply:
        listed = self.list_available()
        default = await self._default_app() or CHAT
        return sdk.AppsListAvailableReply(
            apps=tuple(
                a.model_copy(update={"is_default": a.app_scope == default}) for a in listed.apps
            )
        )

    def context(self, msg: InstanceContextRequest) -> InstanceContextReply:
        """The SDK context's facts of one of `msg.app_scope`'s instances (seed 004 §6.1)."""
        if self._instances.scope_of(msg.instance_id) != msg.app_scope:
            raise LineUpError(ErrorCode.APP_INSTANCE_NOT_FOUND, msg.instance_id)
        manifest = self._book.manifest(msg.app_scope)
        facts = self._lineage.of(msg.instance_id)
        core = msg.app_scope == CHAT or (manifest is not None and manifest.kind in CORE_KINDS)
        return InstanceContextReply(
            kind="core" if core else "installed",
            entrypoint=facts.entrypoint,
            parent_instance_id=facts.parent_instance_id,
            granted_permissions=(
                self._capabilities.granted(msg.app_scope, manifest) if manifest else ()
            ),
        )

    # ------------------------------------------------------------------ launch

    async def launch(
        self, asker: str, from_instance: str, msg: sdk.AppLaunchRequest | sdk.AppsLaunchAction
    ) -> sdk.AppInstanceHandle:
        """Launch `msg.app_scope` for `asker` (the module's docstring for the checks)."""
        conversation = getattr(msg, "conversation_id", None)
        if conversation is not None and conversation != await self._conversation():
            raise LineUpError(ErrorCode.CONVERSATION_MISMATCH, "not the current conversation")
        foreground = msg.display_mode == "foreground"
        if msg.app_scope == CHAT:  # the recovery app: one global instance, brought forward
            if msg.entrypoint is not None:
                raise LineUpError(ErrorCode.ENTRYPOINT_NOT_FOUND, msg.entrypoint)
            if foreground:
                self._in_front(from_instance)
                await self._lifecycle.change(CHAT, "foreground")
            return self._handle(CHAT)
        self._access.require_enabled(msg.app_scope)
        manifest = self._book.manifest(msg.app_scope)
        assert manifest is not None  # require_enabled refuses an app without one
        entrypoint = _entrypoint(manifest, msg.entrypoint)
        if foreground:
            self._in_front(from_instance)
        call_id = f"nav-{asker}-{msg.request_id}"[:200]
        instance_id = f"{msg.app_scope}:{call_id}"[:200]  # as `Lifecycle.launch` names it
        self._lineage.opened(
            instance_id,
            entrypoint=None if entrypoint is None else entrypoint.id,
            parent=from_instance,
        )
        launch = LaunchRequest(app_scope=msg.app_scope, call_id=call_id, foreground=foreground)
        try:
            launched = await self._lifecycle.launch(launch, opener=asker, parent=from_instance)
        except BaseException:
            if not self._instances.is_live(instance_id):
                # Refused (a quota, a start that failed): no facts kept of an instance that is
                # not, so a loop of refused launches holds no memory.
                self._lineage.forget({instance_id})
            raise
        opened = sdk.UiEvent(instance_id=launched.instance_id, event={"kind": sdk.UI_APP_OPENED})
        self._port.soon(self._port.tell_app, msg.app_scope, opened)
        return self._handle(launched.instance_id)

    def _handle(self, instance_id: str) -> sdk.AppInstanceHandle:
        reply = self._lifecycle.reply(instance_id)
        facts = self._lineage.of(instance_id)
        return sdk.AppInstanceHandle(
            instance_id=reply.instance_id,
            app_scope=reply.app_scope,
            state=reply.state,
            entrypoint=facts.entrypoint,
            parent_instance_id=facts.parent_instance_id,
        )

    async def _conversation(self) -> str | None:
        """The runtime's current conversation (the transport's last login), or None."""
        reply = await self._port.store(CursorGetRequest(name=SESSION_CURSOR), CursorGetReply)
        session = None if reply.value is None else session_of(reply.value)
        return None if session is None else session.conversation_id

    # ------------------------------------------------------------------ focus, close, default

    def _target(self, asker: str, instance_id: str, message_type: str) -> str:
        """The live `instance_id`'s app, if `asker` may act on it (its own, or one it launched,
        or the chat)."""
        owner = self._instances.live_scope(instance_id)
        if owner is None:
            raise LineUpError(ErrorCode.APP_INSTANCE_NOT_FOUND, instance_id)
        if owner not in (asker, CHAT) and not launched_by(instance_id, owner, asker):
            raise self._denied(asker, message_type, instance_id)
        return owner

    async def focus(self, asker: str, from_instance: str, instance_id: str) -> sdk.CommandReceipt:
        owner = self._target(asker, instance_id, sdk.AppFocusRequest.TYPE)
        if owner != asker:
            self._in_front(from_instance)
        await self._lifecycle.change(instance_id, "foreground")
        return sdk.CommandReceipt(id=instance_id)

    async def close(self, asker: str, instance_id: str) -> sdk.CommandReceipt:
        owner = self._target(asker, instance_id, sdk.AppCloseRequest.TYPE)
        if owner == CHAT:
            raise LineUpError(ErrorCode.LIFECYCLE_DENIED, "the recovery app stays")
        await self._lifecycle.close(instance_id)
        return sdk.CommandReceipt(id=instance_id)

    async def open_default(self, from_instance: str) -> sdk.AppInstanceHandle:
        self._in_front(from_instance)
        default = await self._default_app() or CHAT
        reply = await self._starts.open(default, explicit=False)
        return self._handle(reply.instance_id)

    # ------------------------------------------------------------------ actions

    async def dispatch(
        self, asker: str, from_instance: str, action: sdk.RuntimeAction
    ) -> sdk.CommandReceipt:
        """A lifecycle or navigation action, as its own request would be decided."""
        if isinstance(action, sdk.LifecycleAction):
            owner = self._instances.scope_of(action.instance_id)
            if owner is None:
                raise LineUpError(ErrorCode.APP_INSTANCE_NOT_FOUND, action.instance_id)
            if owner != asker:
                raise self._denied(asker, sdk.ActionDispatchRequest.TYPE, action.instance_id)
            await self._lifecycle.change(action.instance_id, action.kind.split(".", 1)[1])
            return sdk.CommandReceipt(id=action.instance_id)
        if isinstance(action, sdk.AppsOpenAction):
            launched = await self.open(asker, action.app_scope, action.request_id)
            return sdk.CommandReceipt(id=launched.instance_id)
        if isinstance(action, sdk.AppsLaunchAction):
            handle = await self.launch(asker, from_instance, action)
            return sdk.CommandReceipt(id=handle.instance_id)
        if isinstance(action, sdk.AppsFocusAction):
            return await self.focus(asker, from_instance, action.instance_id)
        if isinstance(action, sdk.AppsCloseAction):
            return await self.close(asker, action.instance_id)
        handle = await self.open_default(from_instance)
        return sdk.CommandReceipt(id=handle.instance_id)

    async def surface(self, msg: SurfaceAppRequest, env: Envelope) -> SurfaceAppReply:
        """A Surface's request for its own app and instance (`SurfaceAppRequest`): the same
        decisions as the app's own; refusals audited as every Surface refusal is."""
        try:
            if self._instances.live_scope(msg.instance_id) is None:
                raise LineUpError(ErrorCode.APP_INSTANCE_NOT_FOUND, msg.instance_id)
            asker = self._surfaces.named(msg.instance_id, msg.surface_id).app_scope
            if msg.method == "state":
                return SurfaceAppReply(result=self._state.view(asker).model_dump(mode="json"))
            if msg.method == "state.subscribe":
                watcher = env.sender.name  # the hostbridge
                view, seq = self._state.watch(asker, msg.instance_id, msg.surface_id, watcher)
                return SurfaceAppReply(result={"view": view.model_dump(mode="json"), "seq": seq})
            if msg.method == "apps.list":
                listed = await self.list_with_default()
                return SurfaceAppReply(result=listed.model_dump(mode="json"))
            try:
                action = _SURFACE_ACTION.validate_python(msg.action)
            except ValidationError:
                raise LineUpError(ErrorCode.BRIDGE_PARAMS_INVALID, "not an action") from None
            receipt = await self.dispatch(asker, msg.instance_id, action)
            return SurfaceAppReply(result={"id": receipt.id})
        except LineUpError as refused:
            raise self._port.surface_refused(env, msg.instance_id, refused) from refused

    async def open(self, asker: str, app_scope: str, request_id: str) -> sdk.AppOpenReply:
        """`apps.open` (kept as it was): `launch` with the app's default entrypoint, in front,
        with no check of the asker's place on the stack."""
        launch = LaunchRequest(app_scope=app_scope, call_id=f"nav-{asker}-{request_id}"[:200])
        launched = await self._lifecycle.launch(
            launch, opener=asker, parent=self._instances.topmost(asker)
        )
        return sdk.AppOpenReply(instance_id=launched.instance_id, app_scope=launched.app_scope)


def _entrypoint(manifest: Manifest, named: str | None) -> Entrypoint | None:
    """The entrypoint a launch opens at: the one named (declared, else `entrypoint_not_found`),
    else the first default-eligible one, else the first; a Surface one this host can show
    (`surface_unavailable`)."""
    if named is not None:
        chosen = next((e for e in manifest.entrypoints if e.id == named), None)
        if chosen is None:
            raise LineUpError(ErrorCode.ENTRYPOINT_NOT_FOUND, named)
    else:
        eligible = [e for e in manifest.entrypoints if e.default_eligible]
        chosen = next(iter(eligible or manifest.entrypoints), None)
    surface = chosen is not None and chosen.kind == SURFACE_KIND
    if surface and chosen is not None and chosen.surface_version not in SURFACE_VERSIONS:
        raise LineUpError(ErrorCode.SURFACE_UNAVAILABLE, chosen.id)
    return chosen
