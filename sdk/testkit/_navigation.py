"""The app's navigation, state view, actions and diagnostics (seed 004 §6.1, §6.2) in memory:
`FakeNavigation` answers them as focus does for the cases it models — the apps it offers
(`available`, set them), launches recorded with their handle (a retry of a `request_id` finds
the same instance), focus and close of the app's own or launched instances (another's is
`app_scope_mismatch`, the chat is never closed: `lifecycle_denied`), the state view of the
fake's instances, the actions decided as their requests are, and diagnostics bounded as the
runtime bounds them (`quota_exceeded` past `MAX_REPORTS`; a report's message kept nowhere)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

from lineup.actors.kernel import ErrorCode, LineUpError, Message
from lineup.facts.scopes import CHAT

from .. import protocol as p


class FakeRuntime(Protocol):
    """What of `_runtime.FakeRuntime` the navigation fake reads (no import: no cycle)."""

    app_scope: str
    instances: set[str]
    states: dict[str, str]

    def _live(self, instance_id: str) -> None: ...

    def _lifecycle(self, request: p.LifecycleRequest) -> p.CommandReceipt: ...


__all__ = ["NAVIGATION_REQUESTS", "FakeNavigation"]

NAVIGATION_REQUESTS = (
    p.AppsListAvailableRequest,
    p.AppLaunchRequest,
    p.AppFocusRequest,
    p.AppCloseRequest,
    p.AppOpenDefaultRequest,
    p.ActionDispatchRequest,
    p.StateSnapshotRequest,
    p.StateSubscribeRequest,
    p.DiagnosticsReportRequest,
)


@dataclass
class FakeNavigation:
    """What the app asked and got (the module's docstring). `available` lists the apps a
    launch may name (the chat is always there); `front` is the instance in front."""

    available: list[p.AppSummary] = field(default_factory=list)
    launched: dict[str, p.AppInstanceHandle] = field(default_factory=dict)  # instance → handle
    focused: list[str] = field(default_factory=list)
    closed: list[str] = field(default_factory=list)
    actions: list[p.RuntimeAction] = field(default_factory=list)
    reports: list[tuple[str, str, str | None]] = field(default_factory=list)  # id, health, code
    front: str | None = None
    subscribed: bool = False

    def _answer(self, request: Any, runtime: FakeRuntime) -> Message:
        if isinstance(request, p.AppsListAvailableRequest):
            chat = p.AppSummary(app_scope=CHAT, title="Chat", kind="core", is_default=True)
            return p.AppsListAvailableReply(apps=(chat, *self.available))
        if isinstance(request, p.StateSnapshotRequest | p.StateSubscribeRequest):
            self.subscribed = self.subscribed or isinstance(request, p.StateSubscribeRequest)
            return self.view(runtime)
        if isinstance(request, p.DiagnosticsReportRequest):
            runtime._live(request.instance_id)
            if len(self.reports) >= p.MAX_REPORTS:
                raise LineUpError(ErrorCode.QUOTA_EXCEEDED, request.instance_id)
            code = None if request.error is None else request.error.code
            self.reports.append((request.instance_id, request.health, code))
            return p.CommandReceipt(id=request.instance_id)
        runtime._live(request.from_instance_id)
        if isinstance(request, p.AppLaunchRequest):
            return self._launch(request, runtime.app_scope)
        if isinstance(request, p.AppFocusRequest):
            return self._focus(request.instance_id, runtime)
        if isinstance(request, p.AppCloseRequest):
            return self._close(request.instance_id, runtime)
        if isinstance(request, p.AppOpenDefaultRequest):
            self.front = CHAT
            return p.AppInstanceHandle(instance_id=CHAT, app_scope=CHAT, state="foreground")
        return self._dispatch(request, runtime)

    def view(self, runtime: FakeRuntime) -> p.AppStateView:
        own = tuple(
            p.InstanceView(
                instance_id=i,
                app_scope=runtime.app_scope,
                state=runtime.states.get(
                    i, "foreground" if self.front in (None, i) else "background"
                ),
            )
            for i in sorted(runtime.instances)
        )
        launched = tuple(
            p.InstanceView(
                instance_id=h.instance_id,
                app_scope=h.app_scope,
                state=h.state,
                entrypoint=h.entrypoint,
                parent_instance_id=h.parent_instance_id,
            )
            for h in self.launched.values()
            if h.instance_id not in self.closed
        )
        return p.AppStateView(
            app_scope=runtime.app_scope,
            enabled=True,
            in_front=any(i.state == "foreground" for i in own),
            instances=own,
            launched=launched,
        )

    def _launch(
        self, request: p.AppLaunchRequest | p.AppsLaunchAction, asker: str
    ) -> p.AppInstanceHandle:
        summary = next((a for a in self.available if a.app_scope == request.app_scope), None)
        if summary is None:
            raise LineUpError(ErrorCode.APP_NOT_INSTALLED, request.app_scope)
        ids = [e.id for e in summary.entrypoints]
        if request.entrypoint is not None and request.entrypoint not in ids:
            raise LineUpError(ErrorCode.ENTRYPOINT_NOT_FOUND, request.entrypoint)
        instance_id = f"{request.app_scope}:nav-{asker}-{request.request_id}"[:200]
        held = self.launched.get(instance_id)
        if held is not None:
            return held
        foreground = request.display_mode == "foreground"
        handle = p.AppInstanceHandle(
            instance_id=instance_id,
            app_scope=request.app_scope,
            state="foreground" if foreground else "background",
            entrypoint=request.entrypoint or (ids[0] if ids else None),
            parent_instance_id=getattr(request, "from_instance_id", None),
        )
        self.launched[instance_id] = handle
        if foreground:
            self.front = instance_id
        return handle

    def _focus(self, instance_id: str, runtime: FakeRuntime) -> p.CommandReceipt:
        if instance_id not in runtime.instances and instance_id not in self._open() | {CHAT}:
            raise LineUpError(ErrorCode.APP_SCOPE_MISMATCH, instance_id)
        self.focused.append(instance_id)
        self.front = instance_id
        return p.CommandReceipt(id=instance_id)

    def _close(self, instance_id: str, runtime: FakeRuntime) -> p.CommandReceipt:
        if instance_id == CHAT:
            raise LineUpError(ErrorCode.LIFECYCLE_DENIED, instance_id)
        if instance_id not in runtime.instances and instance_id not in self._open():
            raise LineUpError(ErrorCode.APP_SCOPE_MISMATCH, instance_id)
        self.closed.append(instance_id)
        return p.CommandReceipt(id=instance_id)

    def _open(self) -> set[str]:
        return {i for i in self.launched if i not in self.closed}

    def _dispatch(self, request: p.ActionDispatchRequest, runtime: FakeRuntime) -> p.CommandReceipt:
        action = request.action
        self.actions.append(action)
        if isinstance(action, p.LifecycleAction):
            verb = action.kind.split(".", 1)[1]
            receipt: p.CommandReceipt = runtime._lifecycle(
                p.LifecycleRequest(instance_id=action.instance_id, action=verb)
            )
            return receipt
        if isinstance(action, p.AppsLaunchAction):
            handle = self._launch(action, runtime.app_scope)
            return p.CommandReceipt(id=handle.instance_id)
        if isinstance(action, p.AppsOpenAction):
            launch = p.AppsLaunchAction(app_scope=action.app_scope, request_id=action.request_id)
            return p.CommandReceipt(id=self._launch(launch, runtime.app_scope).instance_id)
        if isinstance(action, p.AppsFocusAction):
            return self._focus(action.instance_id, runtime)
        if isinstance(action, p.AppsCloseAction):
            return self._close(action.instance_id, runtime)
        self.front = CHAT
        return p.CommandReceipt(id=CHAT)
