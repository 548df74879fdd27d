"""The app's view model (seed 004 §6.1 `AppStateAPI`): the runtime's facts about this app cut to
its scope — its live instances (state, entrypoint, launcher, reported health), the instances
it launched in other apps, and whether one of its own is in front. Never the full runtime
state (`lineup.sdk._protocol.state`).

`snapshot()` asks the runtime. `subscribe(listener)` asks it once, calls the listener with that
view, and from then on with each new view the runtime tells (`miniapp.state.changed`), in
order, each with an `AppStateChange` that names the instances that came, went or changed
state; a view equal to the last one is not told again. After a restart of the runtime's focus
(the app is told to refresh its view) the SDK subscribes again by itself.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from . import protocol as p
from ._channel import RuntimeChannel

__all__ = ["AppStateChange", "State", "StateListener", "Unsubscribe"]


@dataclass(frozen=True, slots=True)
class AppStateChange:
    """How a view differs from the one before (None before the first)."""

    previous: p.AppStateView | None
    changed: tuple[str, ...]  # instance ids (own or launched) that came, went or moved


StateListener = Callable[[p.AppStateView, AppStateChange], Awaitable[None]]
Unsubscribe = Callable[[], None]


class State:
    """`AppContext.state` (the module's docstring)."""

    def __init__(self, host: RuntimeChannel) -> None:
        self._host = host
        self._listeners: list[StateListener] = []
        self._last: p.AppStateView | None = None

    async def snapshot(self) -> p.AppStateView:
        return await self._host.call("focus", p.StateSnapshotRequest(), p.AppStateView)

    async def subscribe(self, listener: StateListener) -> Unsubscribe:
        """Call `listener(view, change)` now and on every change; returns the way to stop."""
        view = await self._host.call("focus", p.StateSubscribeRequest(), p.AppStateView)
        self._listeners.append(listener)
        await listener(view, _change(self._last, view))
        self._last = view

        def unsubscribe() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return unsubscribe

    async def _changed(self, view: p.AppStateView) -> None:
        """The runtime told a new view (the host calls this, in arrival order)."""
        if view == self._last:
            return
        change = _change(self._last, view)
        self._last = view
        for listener in list(self._listeners):
            await listener(view, change)

    async def _resubscribe(self) -> None:
        """Focus restarted (it forgot its subscribers): subscribe again, if subscribed."""
        if self._listeners:
            view = await self._host.call("focus", p.StateSubscribeRequest(), p.AppStateView)
            await self._changed(view)


def _change(before: p.AppStateView | None, after: p.AppStateView) -> AppStateChange:
    def states(view: p.AppStateView | None) -> dict[str, str]:
        if view is None:
            return {}
        return {i.instance_id: i.state for i in (*view.instances, *view.launched)}

    old, new = states(before), states(after)
    changed = sorted(i for i in old.keys() | new.keys() if old.get(i) != new.get(i))
    return AppStateChange(previous=before, changed=tuple(changed))
