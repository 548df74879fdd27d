"""The instances' views and items, from focus to every Shell.

Views and items arrive from focus as events; they are pushed to every connected Shell as
`shell_protocol` frames by one task, in arrival order (no stale overwrite), items in frames of at
most `MAX_ITEMS_FRAME_BYTES`, their Markdown turned into token trees (`_trees`). Items that find
that task idle with nothing queued go at once, from the event's handler, unless a tree is for a
worker thread to make (a long text): the order holds, and a message shown costs no hop. A Shell that
(re)connects gets the app list, the views and the newest page of each instance's items in its
greeting; older pages when it asks (`timeline.earlier`). Focus's app list also tells the
`SurfaceBook` which instances are live, and each view which Surface an instance shows.

The app list and each instance's view come two ways that may cross: told on every change, and
in the reply a greeting asks for. The newer one by focus's clock (`version`) is kept, and a
greeting sends the list and the views it has when it sends (the newest), not those its reply
held: one told while the rest of the greeting was gathered reached the Shell first, and the
reply's older one must not follow it. (Items need none of this: each carries its own `rev`,
and the Shell keeps the newest.)

A frame focus's data would make outside the protocol is not built: it is logged and left out,
so that a peer's mistake never takes a Shell's socket down.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import partial
from typing import Any, Final

import trio
from pydantic import ValidationError

from lineup.actors.focus.messages import (
    ViewItemsPageReply,
    ViewItemsPageRequest,
    ViewsReply,
    ViewsRequest,
)
from lineup.actors.kernel import Bus, LineUpError
from lineup.facts import instances
from lineup.sdk.protocol import ViewItem

from ._server import ShellHub
from ._surface_book import SurfaceBook
from ._trees import TreeCache
from .messages import (
    AppsUpdatedEvent,
    LaunchableApp,
    LiveInstance,
    ViewItemsUpdatedEvent,
    ViewUpdatedEvent,
)
from .shell_protocol import (
    MAX_ITEMS_FRAME_BYTES,
    MAX_LAUNCHABLE,
    ShellApps,
    ShellInstance,
    ShellItems,
    ShellLaunchable,
    ShellOutbound,
    ShellPage,
    ShellView,
)

__all__ = ["ENDED_STATES", "VIEW_QUEUE", "ViewRelay"]

log = logging.getLogger("lineup.hostbridge")

ASK_TIMEOUT: Final = 3.0
VIEW_QUEUE: Final = 256
# Instance states that are gone or going: every state of the lifecycle but the live ones (the
# Shell's ENDED_STATES, web/js/core/state.js, a copy tests/hostbridge compare).
ENDED_STATES: Final[frozenset[str]] = frozenset(instances.TRANSITIONS) - instances.LIVE


class ViewRelay:
    """Focus's views, items and app list, as Shell frames: pushed to every Shell as they
    change, and gathered for a Shell's greeting."""

    def __init__(self, bus: Bus, hub: ShellHub, book: SurfaceBook) -> None:
        self._bus = bus
        self._hub = hub
        self._book = book  # each live instance's Surface, from its views
        self._trees = TreeCache()
        self._apps: ShellApps | None = None  # the newest app list's frame, once one is known
        self._apps_version = -1  # focus's clock when it made the newest list
        # Each live instance's newest view: focus's clock when it took it, and its frame.
        self._views: dict[str, tuple[int, ShellView]] = {}
        # Views and items are pushed by one task, in arrival order (no stale overwrite).
        self._views_in, self._views_out = trio.open_memory_channel[
            ShellView | ViewItemsUpdatedEvent
        ](VIEW_QUEUE)

    def view(self, msg: ViewUpdatedEvent) -> None:
        frame = self._keep_view(msg.version, msg.app_scope, msg.instance_id, msg.view)
        if frame is not None:
            self._queue_view(frame)

    def _keep_view(
        self, version: int, app_scope: str, instance_id: str, view: dict[str, Any]
    ) -> ShellView | None:
        """Keep the instance's view taken at `version` unless a newer one is kept: its frame
        if it is now the newest (None if it is older, or not the protocol's)."""
        kept = self._views.get(instance_id)
        if kept is not None and version < kept[0]:
            log.debug("hostbridge.view_stale")
            return None
        self._book.view(instance_id, view, app_scope)
        try:
            frame = ShellView(app_scope=app_scope, instance_id=instance_id, view=view)
        except ValidationError:
            log.warning("hostbridge.frame_unbuildable type=shell.view")
            return None
        self._views[instance_id] = (version, frame)
        return frame

    def _newest_view(self, instance_id: str, fallback: ShellView) -> ShellView:
        kept = self._views.get(instance_id)
        return fallback if kept is None else kept[1]

    def items(self, msg: ViewItemsUpdatedEvent) -> None:
        """Items go at once when nothing is being pushed and their trees can be made here (a
        message to show: no hop to the pushing task); else in turn, by it."""
        queue = self._views_out.statistics()
        if queue.tasks_waiting_receive and not queue.current_buffer_used:  # nothing in turn
            if not len(self._hub):
                return
            frames = self._item_frames_now(msg.app_scope, msg.instance_id, msg.items)
            if frames is not None:
                for frame in frames:
                    self._hub.broadcast(frame)
                return
        self._queue_view(msg)

    def apps(self, msg: AppsUpdatedEvent) -> None:
        if self._keep_apps(msg.version, msg.foreground, msg.instances, msg.launchable):
            self._hub.broadcast(self._newest_apps())

    def _keep_apps(
        self,
        version: int,
        foreground: str,
        instances: tuple[LiveInstance, ...],
        launchable: tuple[LaunchableApp, ...],
    ) -> bool:
        """Keep focus's list made at `version` unless a newer one is kept: True if its frame
        is now the newest (False if it is older, or not the protocol's)."""
        if version < self._apps_version:
            log.debug("hostbridge.apps_stale")
            return False
        self._apps_version = version
        live = _live_ids(instances)
        self._book.live(live)
        for gone in self._views.keys() - live:
            del self._views[gone]
        frame = _apps_frame(foreground, instances, launchable)
        if frame is None:
            return False
        self._apps = frame
        return True

    def _newest_apps(self) -> ShellApps:
        assert self._apps is not None  # asked for only once one is kept; never unset
        return self._apps

    def _queue_view(self, msg: ShellView | ViewItemsUpdatedEvent) -> None:
        try:
            self._views_in.send_nowait(msg)
        except trio.WouldBlock:
            log.warning("hostbridge.view_dropped instance=%s", msg.instance_id)

    async def push(self) -> None:
        """Push the views and items queued, in order, to every Shell; runs until cancelled."""
        async for msg in self._views_out:
            if not len(self._hub):
                continue
            if isinstance(msg, ShellView):
                self._hub.broadcast(msg)
                continue
            # Only changed items come (focus drops a put of one as it was).
            for frame in await self._item_frames(msg.app_scope, msg.instance_id, msg.items):
                self._hub.broadcast(frame)

    async def _item_frames(
        self, app_scope: str, instance_id: str, items: tuple[ViewItem, ...]
    ) -> list[ShellOutbound]:
        """`items` as `shell.items` frames of at most `MAX_ITEMS_FRAME_BYTES` (or one item)."""
        return self._frames(app_scope, instance_id, [await self._trees.shown(i) for i in items])

    def _item_frames_now(
        self, app_scope: str, instance_id: str, items: tuple[ViewItem, ...]
    ) -> list[ShellOutbound] | None:
        """`_item_frames`, made here; None if a tree is for a worker thread to make."""
        shown = []
        for item in items:
            made = self._trees.shown_now(item)
            if made is None:
                return None
            shown.append(made)
        return self._frames(app_scope, instance_id, shown)

    def _frames(
        self, app_scope: str, instance_id: str, shown: list[tuple[dict[str, Any], int]]
    ) -> list[ShellOutbound]:
        batches: list[list[dict[str, Any]]] = []
        used = 0
        for item, size in shown:
            if not batches or used + size > MAX_ITEMS_FRAME_BYTES:
                batches.append([])
                used = 0
            batches[-1].append(item)
            used += size
        frames: list[ShellOutbound] = []
        for batch in batches:
            try:
                frames.append(
                    ShellItems(app_scope=app_scope, instance_id=instance_id, items=tuple(batch))
                )
            except ValidationError:
                log.warning("hostbridge.frame_unbuildable type=shell.items")
        return frames

    async def page(self, instance_id: str, before: tuple[int, str] | None) -> list[ShellOutbound]:
        """One page of the instance's items (the newest before `before`) as frames: an item
        each, then `shell.page`. Empty if focus could not say."""
        try:
            page = await self._bus.request(
                "focus",
                ViewItemsPageRequest(
                    instance_id=instance_id,
                    before_order=None if before is None else before[0],
                    before_id=None if before is None else before[1],
                ),
                expect=ViewItemsPageReply,
                timeout=ASK_TIMEOUT,
            )
        except LineUpError:
            return []
        frames = await self._item_frames(page.app_scope, instance_id, page.items)
        try:
            frames.append(ShellPage(instance_id=instance_id, more=page.more))
        except ValidationError:
            log.warning("hostbridge.frame_unbuildable type=shell.page")
        return frames

    async def greeting(self) -> list[ShellOutbound | Callable[[], ShellOutbound]]:
        """A (re)connecting Shell's instances and views: the app list (the newest when it is
        sent, see the module's docstring), then each view and the newest page of its items, as
        focus lists them page by page (as far as it answers)."""
        frames: list[ShellOutbound | Callable[[], ShellOutbound]] = []
        offset: int | None = 0
        while offset is not None:
            try:
                views = await self._bus.request(
                    "focus", ViewsRequest(offset=offset), expect=ViewsReply, timeout=ASK_TIMEOUT
                )
            except LineUpError:
                return frames
            if offset == 0:
                self._keep_apps(
                    views.apps_version, views.foreground, views.instances, views.launchable
                )
                if self._apps is not None:
                    frames.append(self._newest_apps)
            for v in views.views:
                self._keep_view(v.version, v.app_scope, v.instance_id, v.view)
                kept = self._views.get(v.instance_id)
                if kept is None:
                    continue  # not the protocol's
                frames.append(partial(self._newest_view, v.instance_id, kept[1]))
                if v.items:
                    frames.extend(await self.page(v.instance_id, None))
            offset = views.next_offset if views.views else None
        return frames


def _live_ids(instances: tuple[LiveInstance, ...]) -> set[str]:
    return {i.instance_id for i in instances if i.state not in ENDED_STATES}


def _apps_frame(
    foreground: str,
    instances: tuple[LiveInstance, ...],
    launchable: tuple[LaunchableApp, ...] = (),
) -> ShellApps | None:
    """The `shell.apps` frame for focus's instance list, or None (logged) if it is not the
    protocol's: a peer's mistake must not take the Shell's socket down. The launcher's apps
    are only offered: one that is not the protocol's is left out, and the rest kept."""
    offered: list[ShellLaunchable] = []
    for app in launchable[:MAX_LAUNCHABLE]:
        try:
            offered.append(ShellLaunchable(app_scope=app.app_scope, title=app.title))
        except ValidationError:
            log.warning("hostbridge.launchable_dropped")
    try:
        return ShellApps(
            foreground=foreground,
            instances=tuple(
                ShellInstance(
                    instance_id=i.instance_id,
                    app_scope=i.app_scope,
                    state=i.state,
                    title=i.title,
                    mode=i.mode,
                )
                for i in instances
            ),
            launchable=tuple(offered),
        )
    except ValidationError:
        log.warning("hostbridge.frame_unbuildable type=shell.apps")
        return None
