"""Focus's side of the Shell's views (DESIGN §5): the apps' views and items in, the hostbridge
told what changed, and the pages a Shell asks for, on the book `_views` keeps.

Theory of operation
-------------------
An app's view or items are checked (`ViewBook`: bounds, trust), refused with an audit row
(`focus.view_refused`), else kept and pushed. One pusher per instance at a time takes what
changed (`ViewBook.take`), so what arrives meanwhile coalesces and the hostbridge never gets
more than it takes in: views at most `VIEW_PUSH_RATE` times a second (an update on its own at
once), items as they come, in batches no bigger than an app's own put. Items put while no
pusher runs for their instance (a message to show, the latency a user waits for) are pushed by
the put itself, before it is answered: no task to start, and the app's next steps (its
acknowledgement, its next render) wait behind the push instead of racing it for the CPU; what
arrives meanwhile goes by a pusher, as before. While a Surface covers
an instance (`_surface_service`), the view its app draws is checked and kept beneath, not
shown; an app whose manifest requires a Surface draws nothing with the Shell's own components.
The hostbridge is told best effort: the Shell asks for every view and page when it
(re)connects (`views`, `items_page`).

The handlers stay on the actor (`@handles`), which delegates here; the instances and the apps
are read through `Access`, the rest of the tree reached through the `Port`.
"""

from __future__ import annotations

import math
from collections.abc import Awaitable, Iterable
from typing import Any, Final

import trio

from lineup.actors.kernel import AuditRecord, Envelope, ErrorCode, LineUpError
from lineup.hostbridge.messages import ViewItemsUpdatedEvent, ViewUpdatedEvent
from lineup.sdk import protocol as sdk
from lineup.wire._limits import encoded_size  # (not `lineup.wire`: its envelope models)

from ._access import Access
from ._port import Port
from ._surfaces import PLACEHOLDER_VIEW, SurfaceBook
from ._views import TRUSTED_KINDS, ViewBook
from .messages import (
    AppView,
    ViewItemsPageReply,
    ViewItemsPageRequest,
    ViewsReply,
    ViewsRequest,
)

__all__ = ["VIEWS_REPLY_BYTES", "VIEW_PUSH_RATE", "ViewService"]

VIEW_PUSH_RATE: Final = 30  # views pushed a second per instance, at most (items: as they come)
VIEWS_REPLY_BYTES: Final = 512 * 1024  # views in one reply to the hostbridge (at least one)


class ViewService:
    """The views of one focus (see the module's docstring): `views` is their book, `surfaces`
    the Surfaces' (read: an open one covers its instance)."""

    def __init__(self, port: Port, access: Access, views: ViewBook, surfaces: SurfaceBook) -> None:
        self._port = port
        self._access = access
        self._book = access.book
        self._instances = access.instances
        self._views = views
        self._surfaces = surfaces
        # The view an app drew while its Surface covers the instance (shown when it closes).
        self._beneath: dict[str, dict[str, Any]] = {}
        self._view_pushers: set[str] = set()
        self._last_push: dict[str, float] = {}  # instance → when its last view went
        self._naps: dict[str, trio.CancelScope] = {}  # pushers waiting for a view's turn

    # ------------------------------------------------------------------ the apps' views

    def update(self, msg: sdk.ViewUpdateRequest, env: Envelope) -> sdk.CommandReceipt:
        """An app's whole view, checked against the bounds every JSON document the runtime
        passes on must keep (depth, items, numbers, strings: the wire's `check_document`),
        `MAX_VIEW_BYTES`, and the trust its kind needs; then coalesced (`_push_views`)."""
        scope = self._access.live_owned(env, msg.instance_id)
        manifest = self._book.manifest(scope)
        if (
            manifest is not None
            and manifest.host.surface_required
            and msg.view.get("kind") in TRUSTED_KINDS
        ):
            # An app that needs a Surface draws nothing with the Shell's own components.
            refused = LineUpError(ErrorCode.SURFACE_UNAVAILABLE, "surface required")
            raise self._port.surface_refused(env, msg.instance_id, refused)
        try:
            if self._surfaces.of(msg.instance_id) is not None:
                # The Surface covers the instance: the app's view is kept, not shown, until
                # the Surface closes.
                self._views.check_view(scope, msg.view)
                self._beneath[msg.instance_id] = msg.view
                return sdk.CommandReceipt(id=msg.instance_id, changed=False)
            self._views.set_view(scope, msg.instance_id, msg.view)
        except LineUpError as refused:
            raise self.refused(env, msg.instance_id, refused) from refused
        self.schedule_push(msg.instance_id)
        return sdk.CommandReceipt(id=msg.instance_id)

    def put_items(
        self, msg: sdk.ViewItemsPutRequest, env: Envelope
    ) -> sdk.CommandReceipt | Awaitable[sdk.CommandReceipt]:
        """Items of the instance's list, new or changed (`ViewBook.put_items`), coalesced with
        its view: only what changed goes on to the Shell, before the put is answered when no
        pusher runs for the instance (the module's docstring). Taken here, in the order the
        puts arrive: only the push is awaited."""
        scope = self._access.live_owned(env, msg.instance_id)
        try:
            changed = self._views.put_items(scope, msg.instance_id, msg.items)
        except LineUpError as refused:
            raise self.refused(env, msg.instance_id, refused) from refused
        receipt = sdk.CommandReceipt(id=msg.instance_id, changed=bool(changed))
        if not changed:
            return receipt
        if msg.instance_id in self._view_pushers:
            self.schedule_push(msg.instance_id, items=True)
            return receipt
        self._view_pushers.add(msg.instance_id)  # a put behind this one leaves its items to it
        return self._push_items_now(msg.instance_id, receipt)

    async def _push_items_now(
        self, instance_id: str, receipt: sdk.CommandReceipt
    ) -> sdk.CommandReceipt:
        """Push the instance's changed items, as a pusher would (none ran for it, so no view
        is waiting: a waiting view always has one), then answer the put; a pusher takes what
        arrives meanwhile."""
        try:
            change = self._views.take(instance_id, with_view=False)
            if change is not None:
                await self._tell_items(instance_id, change[1])
        finally:
            self._view_pushers.discard(instance_id)
        if self._views.waiting(instance_id):
            self.schedule_push(instance_id)
        return receipt

    def refused(self, env: Envelope, instance_id: str, refused: LineUpError) -> LineUpError:
        """Audit a refused view or items (with the bound or rule it broke) and say why to the
        app: `permission_denied` for trust, `invalid_arguments` for a bound."""
        self._port.bus.audit(
            AuditRecord(
                event="focus.view_refused",
                actor=self._port.me.name,
                peer=env.sender.name,
                code=refused.code.value,
                message_type=env.body.TYPE,
                subject_id=instance_id,
            )
        )
        if refused.code is ErrorCode.PERMISSION_DENIED:
            return LineUpError(ErrorCode.PERMISSION_DENIED, "not this app's component")
        return LineUpError(ErrorCode.INVALID_ARGUMENTS, "view out of bounds")

    def show(self, scope: str, instance_id: str, view: dict[str, Any]) -> None:
        """Make `view` the instance's (a Surface's, or its app's again) and push it."""
        self._views.show(scope, instance_id, view)
        self.schedule_push(instance_id)

    def uncover(self, scope: str, instance_id: str) -> None:
        """The instance's Surface closed: show the view its app drew beneath it (or a
        placeholder, if it drew none)."""
        kept = self._beneath.pop(instance_id, None)
        self.show(scope, instance_id, kept or PLACEHOLDER_VIEW)

    def drop(self, instance_id: str) -> None:
        """The instance ended: its view and items go, and its pace with them."""
        self._views.drop(instance_id)
        self._beneath.pop(instance_id, None)
        self._last_push.pop(instance_id, None)

    # ------------------------------------------------------------------ pushes

    def schedule_push(self, instance_id: str, *, items: bool = False) -> None:
        if instance_id not in self._view_pushers:
            self._view_pushers.add(instance_id)
            self._port.soon(self._push_views, instance_id)
        elif items and (nap := self._naps.get(instance_id)) is not None:
            nap.cancel()  # items do not wait for the next view's turn

    async def _push_views(self, instance_id: str) -> None:
        """Push what changed of the instance; what arrives meanwhile coalesces (the latest
        view, the latest version of each item), so the hostbridge never gets more than it
        takes in. Views go at most `VIEW_PUSH_RATE` times a second (an update on its own at
        once); items go as they come, each a message to show."""
        try:
            while True:
                due = self._last_push.get(instance_id, -math.inf) + 1 / VIEW_PUSH_RATE
                now = trio.current_time()
                change = self._views.take(instance_id, with_view=now >= due)
                if change is None:
                    if not self._views.view_waiting(instance_id):
                        return
                    # Until the view is due, or items come (`schedule_push` wakes it).
                    with trio.CancelScope(deadline=due) as nap:
                        self._naps[instance_id] = nap
                        await trio.sleep_forever()
                    self._naps.pop(instance_id, None)
                    continue
                view, items = change
                if view is not None:
                    self._last_push[instance_id] = now
                    await self._port.tell_hostbridge(
                        ViewUpdatedEvent(
                            app_scope=view.app_scope,
                            instance_id=instance_id,
                            view=view.view,
                            version=view.version,
                        )
                    )
                await self._tell_items(instance_id, items)
        finally:
            self._view_pushers.discard(instance_id)
            self._naps.pop(instance_id, None)

    async def _tell_items(self, instance_id: str, items: list[sdk.ViewItem]) -> None:
        for batch in _batches(items, sdk.MAX_VIEW_ITEMS_PUT_BYTES):
            await self._port.tell_hostbridge(
                ViewItemsUpdatedEvent(
                    app_scope=self._instances.scope_of(instance_id) or "",
                    instance_id=instance_id,
                    items=tuple(batch),
                )
            )

    # ------------------------------------------------------------------ the Shell's pages

    def views(self, msg: ViewsRequest) -> ViewsReply:
        """The live views from `msg.offset` on, as many as `VIEWS_REPLY_BYTES` hold (at least
        one); an app whose view focus lacks is asked for it."""
        live = self._instances.shown()
        views = self._views.views()
        if msg.offset == 0:
            owners = self._instances.owners()
            for scope in {owners[i] for i in live if i not in views}:
                self._port.soon(self._port.tell_app, scope, sdk.ViewRefreshEvent())
        shown = [v for i, v in views.items() if i in live][msg.offset :]
        page: list[AppView] = []
        used = 0
        for view in shown:
            size = encoded_size(view.view)
            if page and used + size > VIEWS_REPLY_BYTES:
                break
            page.append(view)
            used += size
        apps = self._access.app_list()
        return ViewsReply(
            views=tuple(page),
            foreground=apps.foreground,
            instances=apps.instances,
            launchable=apps.launchable,
            apps_version=apps.version,
            next_offset=msg.offset + len(page) if len(page) < len(shown) else None,
        )

    def items_page(self, msg: ViewItemsPageRequest) -> ViewItemsPageReply:
        """A bounded page of a live instance's items, for a Shell."""
        scope = self._instances.scope_of(msg.instance_id)
        if scope is None or msg.instance_id not in self._instances.shown():
            raise LineUpError(ErrorCode.APP_INSTANCE_NOT_FOUND, msg.instance_id)
        before = (
            None
            if msg.before_order is None or msg.before_id is None
            else (msg.before_order, msg.before_id)
        )
        items, more = self._views.page(msg.instance_id, before)
        return ViewItemsPageReply(
            app_scope=scope, instance_id=msg.instance_id, items=tuple(items), more=more
        )


def _batches(items: Iterable[sdk.ViewItem], budget: int) -> Iterable[list[sdk.ViewItem]]:
    """`items` in order, in lists of at most `budget` bytes each (one item may fill one)."""
    batch: list[sdk.ViewItem] = []
    used = 0
    for item in items:
        size = len(item.model_dump_json().encode())
        if batch and used + size > budget:
            yield batch
            batch, used = [], 0
        batch.append(item)
        used += size
    if batch:
        yield batch
