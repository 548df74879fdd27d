"""Each app's view model (seed 004 §6.1 `AppStateAPI`), cut to its scope, and who hears of it.

Theory of operation
-------------------
An app's view (`sdk.AppStateView`) is computed, never stored: from the instances (its own live
ones, and the live ones of other apps it launched — their ids carry the launcher, see
`launched_by`), the registry (is it enabled), and `Lineage`: the facts focus keeps of an
instance beyond its state — the entrypoint it was opened at, the instance that launched it,
its last reported health. Nothing of another app is in it but the instances this app launched,
and of those only their ids, states and entrypoints.

An app that subscribes (`focus.sdk.state.subscribe`) is told `miniapp.state.changed` with its
new view each time focus pushes the Shell's app list (every change of the instances or of the
stack does) or an instance's health changes, and only when its view is not the one it was last
told. The subscriptions and the lineage are memory: after a restart of focus the SDK subscribes
again (focus tells it to refresh its view when it starts), and an instance launched before
keeps its launcher (its id) but not its entrypoint.

A Surface subscribes as well (the bridge's `lineup/state/subscribe`, for its own app): its
hostbridge is told `hostbridge.surface.notify` (`app_state`, with a `seq` that only goes up, so
the Shell drops one that arrives late) each time that app's view changes, while that Surface is
the instance's open one; a Surface closed or gone is forgotten at the next change.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, replace
from typing import Final

from lineup.hostbridge.messages import SurfaceNotifyEvent
from lineup.sdk import protocol as sdk

from ._access import Access
from ._port import NOTIFY_TIMEOUT, Port
from ._surfaces import SurfaceBook

MAX_WATCHING_SURFACES: Final = 256  # Surfaces subscribed at once (the oldest forgotten)

__all__ = ["AppState", "Facts", "Lineage", "launched_by"]


def launched_by(instance_id: str, owner: str, launcher: str) -> bool:
    """Is `instance_id` (of app `owner`) one that app `launcher` launched (`apps.launch`,
    `apps.open`: `<owner>:nav-<launcher>-<request id>`)?"""
    return owner != launcher and instance_id.startswith(f"{owner}:nav-{launcher}-")


@dataclass(frozen=True, slots=True)
class Facts:
    entrypoint: str | None = None
    parent_instance_id: str | None = None
    health: sdk.Health = "unknown"


class Lineage:
    """What focus knows of an instance beyond its state (the module's docstring)."""

    def __init__(self) -> None:
        self._facts: dict[str, Facts] = {}

    def of(self, instance_id: str) -> Facts:
        return self._facts.get(instance_id, Facts())

    def opened(self, instance_id: str, *, entrypoint: str | None, parent: str | None) -> None:
        """A launch: kept as the first one said (a retry of the launch changes nothing)."""
        if instance_id not in self._facts:
            self._facts[instance_id] = Facts(entrypoint=entrypoint, parent_instance_id=parent)

    def reported(self, instance_id: str, health: sdk.Health) -> bool:
        """An app's report of its instance's health; whether it changed."""
        held = self.of(instance_id)
        self._facts[instance_id] = replace(held, health=health)
        return held.health != health

    def forget(self, ended: set[str]) -> None:
        """Drop the facts of instances that ended (one not born yet keeps its launch's)."""
        for gone in [i for i in self._facts if i in ended]:
            del self._facts[gone]


class AppState:
    """The apps' views and their subscribers (the module's docstring)."""

    def __init__(
        self, port: Port, access: Access, lineage: Lineage, surfaces: SurfaceBook | None = None
    ) -> None:
        self._port = port
        self._book = surfaces
        self._access = access
        self._instances = access.instances
        self._lineage = lineage
        self._subscribers: set[str] = set()
        self._told: dict[str, sdk.AppStateView] = {}
        # instance_id → (app, surface_id, hostbridge, the view it was last told)
        self._surfaces: OrderedDict[str, tuple[str, str, str, sdk.AppStateView]] = OrderedDict()
        self._seq = 0

    def view(self, scope: str) -> sdk.AppStateView:
        _front, live = self._instances.listing()
        own: list[sdk.InstanceView] = []
        launched: list[sdk.InstanceView] = []
        for instance_id, owner, state in live:
            if owner == scope:
                own.append(self._instance(instance_id, owner, state))
            elif launched_by(instance_id, owner, scope):
                launched.append(self._instance(instance_id, owner, state))
        return sdk.AppStateView(
            app_scope=scope,
            enabled=self._access.book.enabled(scope),
            in_front=any(i.state == "foreground" for i in own),
            instances=tuple(own),
            launched=tuple(launched),
        )

    def _instance(self, instance_id: str, owner: str, state: str) -> sdk.InstanceView:
        facts = self._lineage.of(instance_id)
        return sdk.InstanceView(
            instance_id=instance_id,
            app_scope=owner,
            state=state,
            entrypoint=facts.entrypoint,
            parent_instance_id=facts.parent_instance_id,
            health=facts.health,
        )

    def subscribe(self, scope: str) -> sdk.AppStateView:
        """`scope` hears of its view from now on; its view now."""
        self._subscribers.add(scope)
        view = self.view(scope)
        self._told[scope] = view
        return view

    def watch(
        self, scope: str, instance_id: str, surface_id: str, hostbridge: str
    ) -> tuple[sdk.AppStateView, int]:
        """A Surface of `scope`'s instance subscribes (its hostbridge is told); its view now,
        and the `seq` it is at."""
        view = self.view(scope)
        self._surfaces.pop(instance_id, None)
        self._surfaces[instance_id] = (scope, surface_id, hostbridge, view)
        while len(self._surfaces) > MAX_WATCHING_SURFACES:
            self._surfaces.popitem(last=False)
        self._seq += 1
        return view, self._seq

    def changed(self) -> None:
        """Something focus shows changed: each subscriber whose view changed is told it, and
        each Surface still open that subscribed."""
        owners = self._instances.owners()
        self._lineage.forget({i for i in owners if not self._instances.is_live(i)})
        for scope in sorted(self._subscribers):
            view = self.view(scope)
            if self._told.get(scope) == view:
                continue
            self._told[scope] = view
            self._port.soon(self._port.tell_app, scope, sdk.AppStateChangedEvent(view=view))
        for instance_id, (scope, surface_id, hostbridge, told) in list(self._surfaces.items()):
            open_one = self._book.of(instance_id) if self._book is not None else None
            if open_one is None or open_one.surface_id != surface_id:
                del self._surfaces[instance_id]  # closed, or the instance ended
                continue
            view = self.view(scope)
            if view == told:
                continue
            self._surfaces[instance_id] = (scope, surface_id, hostbridge, view)
            self._seq += 1
            event = SurfaceNotifyEvent(
                instance_id=instance_id,
                surface_id=surface_id,
                kind="app_state",
                params={"view": view.model_dump(mode="json"), "seq": self._seq},
            )
            self._port.soon(self._tell_surface, hostbridge, event)

    async def _tell_surface(self, hostbridge: str, event: SurfaceNotifyEvent) -> None:
        if await self._port.bus.tell(hostbridge, event, timeout=NOTIFY_TIMEOUT) is not None:
            self._surfaces.pop(event.instance_id, None)  # gone: it subscribes again
