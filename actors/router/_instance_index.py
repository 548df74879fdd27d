"""Focus's instances as the router last heard of them: a call's instance without a hop.

Theory of operation
-------------------
Focus owns the instances, and the router used to ask it for a call's instance on every call
(`focus.instance.find`): a round trip on the hottest path. Focus now keeps the router told of
its stack (`InstanceIndexEvent`, after every change it persists, before it announces that
change, on the same ordered channel), and the router looks the instance up here. Focus keeps
its authority: the index answers only what focus's own lookup would answer without acting, and
anything else is still focus's to decide, so a miss (`None`) means "ask focus":

- the instance named, or the app's topmost on the stack (focus's `newest`), if it is up
  (`starting`, `foreground`, `background`); a `suspended` one is resumed by focus, and one
  that is not live is focus's to refuse;
- none while the index came from a focus connection that is gone (a focus that restarted
  tells its own), nor of an app focus would refuse (not enabled: focus leaves it out).

An index a moment old can only be what focus would have answered a moment earlier: the store
refuses, in the step's transaction, a call to an instance whose end is recorded (focus records
an end before it tells anyone), so a call never goes to an instance known to have ended. A
call that brings its instance forward, or one of an app whose launch is still unannounced, asks
focus as before (`_pipeline`). No I/O here.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from .messages import IndexedInstance, InstanceIndexEvent

__all__ = ["UP", "InstanceIndex"]

# The states in which focus finds an instance without acting on it (no resume, no refusal).
UP: Final = frozenset({"starting", "foreground", "background"})


class InstanceIndex:
    """The latest index focus told (the module's docstring). `source()` is the current channel
    to focus (None without one): an index counts only while its channel is the current one."""

    def __init__(self, source: Callable[[], object | None]) -> None:
        self._source = source
        self._from: object | None = None
        self._version = -1
        self._by_id: dict[str, IndexedInstance] = {}
        self._top: dict[str, IndexedInstance] = {}  # per app: its instance highest on the stack

    def update(self, event: InstanceIndexEvent) -> bool:
        """Take `event` if it is newer than the one held. Returns whether it was taken."""
        if event.version <= self._version:
            return False
        self._version = event.version
        self._from = self._source()
        self._by_id = {entry.instance_id: entry for entry in event.instances}
        self._top = {entry.app_scope: entry for entry in event.instances}  # the last wins
        return True

    def find(self, app_scope: str, instance_id: str | None) -> IndexedInstance | None:
        """The instance a call of `app_scope` goes to (`instance_id`, else the app's topmost),
        if the index may answer for focus; None: ask focus."""
        if self._from is None or self._source() is not self._from:
            return None
        if instance_id is None:
            found = self._top.get(app_scope)
        else:
            found = self._by_id.get(instance_id)
            if found is not None and found.app_scope != app_scope:
                return None
        return found if found is not None and found.state in UP else None
