"""Focus's handlers of the SDK's state views, navigation, actions and diagnostics (seed 004
§6.1, §6.2), and of a Surface's requests for the same (`focus.ui.surface.app`): a part of
`FocusActor`, each handler delegating to the service that decides (`_navigation`,
`_app_state`, `_diagnostics`)."""

from __future__ import annotations

from lineup.actors.kernel import Envelope, app_scope_of, handles
from lineup.sdk import protocol as sdk

from ._app_state import AppState
from ._diagnostics import Diagnostics
from ._navigation import Navigation
from .messages import (
    InstanceContextReply,
    InstanceContextRequest,
    SurfaceAppReply,
    SurfaceAppRequest,
)

__all__ = ["NavigationHandlers"]


class NavigationHandlers:
    """Mixed into `FocusActor`, which makes the three services."""

    navigation: Navigation
    app_state: AppState
    diagnostics: Diagnostics

    @handles(sdk.AppsListAvailableRequest)
    async def on_apps_list(
        self, msg: sdk.AppsListAvailableRequest, env: Envelope
    ) -> sdk.AppsListAvailableReply:
        return await self.navigation.list_with_default()

    @handles(sdk.AppLaunchRequest)
    async def on_apps_launch(
        self, msg: sdk.AppLaunchRequest, env: Envelope
    ) -> sdk.AppInstanceHandle:
        asker = self.navigation.asking(env, msg.from_instance_id)
        return await self.navigation.launch(asker, msg.from_instance_id, msg)

    @handles(sdk.AppFocusRequest)
    async def on_apps_focus(self, msg: sdk.AppFocusRequest, env: Envelope) -> sdk.CommandReceipt:
        asker = self.navigation.asking(env, msg.from_instance_id)
        return await self.navigation.focus(asker, msg.from_instance_id, msg.instance_id)

    @handles(sdk.AppCloseRequest)
    async def on_apps_close(self, msg: sdk.AppCloseRequest, env: Envelope) -> sdk.CommandReceipt:
        asker = self.navigation.asking(env, msg.from_instance_id)
        return await self.navigation.close(asker, msg.instance_id)

    @handles(sdk.AppOpenDefaultRequest)
    async def on_apps_open_default(
        self, msg: sdk.AppOpenDefaultRequest, env: Envelope
    ) -> sdk.AppInstanceHandle:
        self.navigation.asking(env, msg.from_instance_id)
        return await self.navigation.open_default(msg.from_instance_id)

    @handles(sdk.ActionDispatchRequest)
    async def on_action(self, msg: sdk.ActionDispatchRequest, env: Envelope) -> sdk.CommandReceipt:
        asker = self.navigation.asking(env, msg.from_instance_id)
        return await self.navigation.dispatch(asker, msg.from_instance_id, msg.action)

    @handles(sdk.StateSnapshotRequest)
    def on_state_snapshot(self, msg: sdk.StateSnapshotRequest, env: Envelope) -> sdk.AppStateView:
        return self.app_state.view(app_scope_of(env.sender))

    @handles(sdk.StateSubscribeRequest)
    def on_state_subscribe(self, msg: sdk.StateSubscribeRequest, env: Envelope) -> sdk.AppStateView:
        return self.app_state.subscribe(app_scope_of(env.sender))

    @handles(sdk.DiagnosticsReportRequest)
    def on_diagnostics(
        self, msg: sdk.DiagnosticsReportRequest, env: Envelope
    ) -> sdk.CommandReceipt:
        return self.diagnostics.report(msg, env)

    @handles(InstanceContextRequest)
    def on_instance_context(
        self, msg: InstanceContextRequest, env: Envelope
    ) -> InstanceContextReply:
        return self.navigation.context(msg)

    @handles(SurfaceAppRequest)
    async def on_surface_app(self, msg: SurfaceAppRequest, env: Envelope) -> SurfaceAppReply:
        return await self.navigation.surface(msg, env)
