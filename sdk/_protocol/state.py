"""The app's view model (seed 004 §6.1 `AppStateAPI`): the runtime's facts about this app, cut to
its scope — its own live instances, the instances it launched in other apps, and whether one
of its instances is in front. Never the full runtime state: another app's instances (but those
this app launched), the stack's order and the other apps' health are not in it.

`focus.sdk.state.snapshot` reads it; `focus.sdk.state.subscribe` reads it and has the runtime
tell the app `miniapp.state.changed` whenever it changes (until focus restarts: the SDK
subscribes again when told to refresh its view).
"""

from typing import Literal

from pydantic import Field

from lineup.actors.kernel import Message

from .common import Id

__all__ = [
    "AppStateChangedEvent",
    "AppStateView",
    "Health",
    "InstanceView",
    "StateSnapshotRequest",
    "StateSubscribeRequest",
]

# What an app last reported of an instance's health (`diagnostics.report`); `unknown` before.
Health = Literal["unknown", "ok", "degraded", "failing"]


class InstanceView(Message):
    type: Literal["focus.sdk.state.instance"] = "focus.sdk.state.instance"
    instance_id: Id
    app_scope: Id
    state: str = Field(max_length=40)  # starting, foreground, background, suspended
    entrypoint: Id | None = None
    parent_instance_id: Id | None = None
    health: Health = "unknown"


class AppStateView(Message):
    type: Literal["focus.sdk.state.view"] = "focus.sdk.state.view"
    app_scope: Id
    enabled: bool
    in_front: bool  # one of its own instances is in the foreground
    instances: tuple[InstanceView, ...]  # its own live instances, bottom of the stack first
    launched: tuple[InstanceView, ...] = ()  # live instances of other apps it launched


class StateSnapshotRequest(Message):
    type: Literal["focus.sdk.state.snapshot"] = "focus.sdk.state.snapshot"


class StateSubscribeRequest(Message):
    type: Literal["focus.sdk.state.subscribe"] = "focus.sdk.state.subscribe"


class AppStateChangedEvent(Message):
    type: Literal["miniapp.state.changed"] = "miniapp.state.changed"
    view: AppStateView
