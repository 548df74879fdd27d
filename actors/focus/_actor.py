"""The focus actor: instances and their views, between the MiniApps and the Shell.

This first version knows the instances its config names (the chat's) and relays views and user
actions; the registry, the focus stack and lifecycles arrive with the SDK/tools issue. Views are
cached here so a (re)connecting Shell gets them at once; after a restart of this actor the cache
is empty, so it asks every app to send its view again.
"""

from __future__ import annotations

import logging
from typing import Any, Final

import trio

from lineup.actors.kernel import (
    Actor,
    ActorKind,
    Envelope,
    ErrorCode,
    LineUpError,
    Message,
    handles,
)
from lineup.hostbridge.messages import ViewUpdatedEvent
from lineup.sdk import protocol as sdk

from .messages import AppView, UiEventAccepted, UiEventRequest, ViewsReply, ViewsRequest

__all__ = ["FocusActor"]

log = logging.getLogger("lineup.focus")

NOTIFY_TIMEOUT: Final = 5.0
MAX_VIEW_KEYS: Final = 64


class FocusActor(Actor):
    kind = ActorKind.FOCUS

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # instance_id -> app_scope of the app that owns it
        self._owners: dict[str, str] = {
            str(app["instance_id"]): str(app["app_scope"])
            for app in self.ctx.config.get("apps", [])
        }
        self._views: dict[str, AppView] = {}

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            self._nursery = nursery
            task_status.started()
            for scope in sorted(set(self._owners.values())):
                nursery.start_soon(self._tell_app, scope, sdk.ViewRefreshEvent())
            await trio.sleep_forever()  # the nursery serves the handlers' background sends

    async def _tell_app(self, app_scope: str, event: Message) -> None:
        try:
            await self.bus.notify(f"miniapp:{app_scope}", event, timeout=NOTIFY_TIMEOUT)
        except LineUpError as exc:
            log.info("focus.app_not_told app=%s code=%s", app_scope, exc.code.value)

    def _owner(self, instance_id: str) -> str:
        owner = self._owners.get(instance_id)
        if owner is None:
            raise LineUpError(ErrorCode.APP_INSTANCE_NOT_FOUND, instance_id)
        return owner

    @handles(sdk.ViewUpdateRequest)
    def on_view_update(self, msg: sdk.ViewUpdateRequest, env: Envelope) -> sdk.CommandReceipt:
        scope = env.sender.name.removeprefix("miniapp:")
        if env.sender.kind is not ActorKind.MINIAPP or self._owner(msg.instance_id) != scope:
            raise LineUpError(ErrorCode.APP_SCOPE_MISMATCH, msg.instance_id)
        if len(msg.view) > MAX_VIEW_KEYS:
            raise LineUpError(ErrorCode.INVALID_ARGUMENTS, "view too wide")
        view = AppView(app_scope=scope, instance_id=msg.instance_id, view=msg.view)
        self._views[msg.instance_id] = view
        self._nursery.start_soon(self._push, view)
        return sdk.CommandReceipt(id=msg.instance_id)

    async def _push(self, view: AppView) -> None:
        try:
            await self.bus.notify(
                "hostbridge",
                ViewUpdatedEvent(
                    app_scope=view.app_scope, instance_id=view.instance_id, view=view.view
                ),
                timeout=NOTIFY_TIMEOUT,
            )
        except LineUpError:
            pass  # the Shell asks for every view when it (re)connects

    @handles(ViewsRequest)
    def on_views(self, msg: ViewsRequest, env: Envelope) -> ViewsReply:
        missing = {self._owners[i] for i in self._owners if i not in self._views}
        for scope in missing:
            self._nursery.start_soon(self._tell_app, scope, sdk.ViewRefreshEvent())
        return ViewsReply(views=tuple(self._views.values()))

    @handles(UiEventRequest)
    async def on_ui_event(self, msg: UiEventRequest, env: Envelope) -> UiEventAccepted:
        scope = self._owner(msg.instance_id)
        await self.bus.notify(
            f"miniapp:{scope}",
            sdk.UiEvent(instance_id=msg.instance_id, event=msg.event),
            timeout=NOTIFY_TIMEOUT,
        )
        return UiEventAccepted(instance_id=msg.instance_id)
