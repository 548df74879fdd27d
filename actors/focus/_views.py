"""What the Shell shows of each live instance: its view, its items, and what is still to go.

Theory of operation
-------------------
An instance's *view* is one small document (at most `MAX_VIEW_BYTES`), replaced whole. What
grows — a timeline's messages — is its *items*: kept by id, shown by `(order, id)`, each put
on its own, the newest `MAX_VIEW_ITEMS` kept, each version stamped (`rev`) so a Shell keeps
the newest whatever order versions reach it in. So no frame between an app and the Shell grows
with the number of items: a put carries a bounded batch, a push to the hostbridge the view and
the items that changed since the last push, and the Shell gets items a bounded page at a time
(`page`), newest first, older ones when it asks.

A view of a *trusted kind* (one the Shell draws with the runtime's own components) is accepted
only from the app that ships that component, and only if the app is the catalogue's own (system
or bundled), never a configured, development or installed app of the same scope; items, which
only such a component shows, likewise. A kind under `lineup.` is the runtime's own (focus
makes the `lineup.surface` view of an open Surface, `show`): no app draws one.

Pushes coalesce: while one is on its way, the latest view and the latest version of each
changed item wait (`take`), never a queue of them; the actor paces views (a view may take any
rate an app likes to send), not items, which are each a message to show and come only from
trusted apps. No I/O here: the actor does the telling.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Final

from lineup.actors.kernel import ErrorCode, LineUpError
from lineup.facts.views import ITEM_COMPONENTS, MAX_VIEW_KEYS, RUNTIME_KINDS_PREFIX, TRUSTED_KINDS
from lineup.sdk import protocol as sdk
from lineup.wire._limits import WireLimitError, check_document, check_encoded

from .messages import AppView

__all__ = [
    "ITEM_COMPONENTS",
    "MAX_VIEW_KEYS",
    "PAGE_BYTES",
    "TRUSTED_KINDS",
    "ViewBook",
    "ViewRefused",
]

# Items in one page for the Shell (at least one): a reply and its frame stay within 1 MiB.
PAGE_BYTES: Final = 768 * 1024


class ViewRefused(LineUpError):
    """A view or items broke a bound (`code` says which) or a trust rule (`permission_denied`)."""


@dataclass
class _Instance:
    app_scope: str
    view: AppView | None = None
    items: dict[str, sdk.ViewItem] = field(default_factory=dict)
    sizes: dict[str, int] = field(default_factory=dict)  # item id → its encoded bytes
    unpushed_view: AppView | None = None
    unpushed_items: dict[str, sdk.ViewItem] = field(default_factory=dict)


class ViewBook:
    """Views and items by instance. `trusted` are the scopes of the catalogue's own apps."""

    def __init__(self, trusted: frozenset[str]) -> None:
        self._trusted = trusted
        self._instances: dict[str, _Instance] = {}
        # Each changed item gets the next stamp. Started from the clock (µs), so the stamps
        # of a restarted focus, or runtime, are above those a Shell holds from before.
        self._rev = time.time_ns() // 1000

    # ------------------------------------------------------------------ from the apps

    def may_show(self, app_scope: str, kind: object) -> bool:
        """Whether `app_scope` may have a view of `kind` drawn (only its own trusted kinds, and
        none of the runtime's own)."""
        if isinstance(kind, str) and kind.startswith(RUNTIME_KINDS_PREFIX):
            return False
        owner = TRUSTED_KINDS.get(kind) if isinstance(kind, str) else None
        return owner is None or (owner == app_scope and app_scope in self._trusted)

    def set_view(self, app_scope: str, instance_id: str, view: dict[str, Any]) -> None:
        """Take the instance's new view, once `check_view` passes it (else it is not taken)."""
        self.check_view(app_scope, view)
        self.show(app_scope, instance_id, view)

    def show(self, app_scope: str, instance_id: str, view: dict[str, Any]) -> None:
        """Take a view focus made itself (a Surface's), unchecked: its parts are bounded where
        they are made. The instance's first view goes with the newest page of its items: a Shell
        that greeted before it (a restarted focus, its apps still putting their items again)
        was listed no view of the instance, so got no page of them, and items already pushed
        would never reach it."""
        entry = self._entry(app_scope, instance_id)
        if entry.view is None:
            newest, _ = self.page(instance_id)
            entry.unpushed_items.update((i.id, i) for i in newest)
        shown = AppView(
            app_scope=app_scope,
            instance_id=instance_id,
            view=view,
            items=len(entry.items),
            version=time.monotonic_ns(),
        )
        entry.view = entry.unpushed_view = shown

    def check_view(self, app_scope: str, view: dict[str, Any]) -> None:
        """Every bound a view must keep. Raises `ViewRefused`: `invalid_arguments` (too many
        keys), `envelope_too_large` (bytes, a string, …), `envelope_too_deep`,
        `envelope_malformed`, or `permission_denied` (a trusted kind this app may not use)."""
        if len(view) > MAX_VIEW_KEYS:
            raise ViewRefused(ErrorCode.INVALID_ARGUMENTS, "view too wide")
        try:
            check_encoded(view, sdk.MAX_VIEW_BYTES)  # the document's bounds, then its bytes
        except WireLimitError as exc:
            raise ViewRefused(exc.code, "view bounds") from exc
        if not self.may_show(app_scope, view.get("kind")):
            raise ViewRefused(ErrorCode.PERMISSION_DENIED, "trusted component")

    def put_items(self, app_scope: str, instance_id: str, items: tuple[sdk.ViewItem, ...]) -> int:
        """Add or replace items; returns how many changed. Raises `ViewRefused` (nothing is
        taken): `permission_denied` unless the app ships a component that shows items,
        `envelope_too_large` for an item over `MAX_VIEW_ITEM_BYTES`, or a document bound."""
        if app_scope not in self._trusted or all(
            TRUSTED_KINDS[kind] != app_scope for kind in ITEM_COMPONENTS
        ):
            raise ViewRefused(ErrorCode.PERMISSION_DENIED, "items")
        sizes = []
        for item in items:
            _check(item.fields)
            size = len(item.model_dump_json().encode())
            if size > sdk.MAX_VIEW_ITEM_BYTES:
                raise ViewRefused(ErrorCode.ENVELOPE_TOO_LARGE, "item bytes")
            sizes.append(size)
        entry = self._entry(app_scope, instance_id)
        changed = 0
        for item, size in zip(items, sizes, strict=True):
            held = entry.items.get(item.id)
            if held is not None and (held.order, held.fields) == (item.order, item.fields):
                continue  # put again as it was (the app restarted): nothing to show anew
            self._rev += 1
            stamped = item.model_copy(update={"rev": self._rev})
            entry.items[item.id] = entry.unpushed_items[item.id] = stamped
            entry.sizes[item.id] = size
            changed += 1
        if len(entry.items) > sdk.MAX_VIEW_ITEMS:
            for old in _ordered(entry.items.values())[: -sdk.MAX_VIEW_ITEMS]:
                del entry.items[old.id]
                entry.sizes.pop(old.id, None)
                entry.unpushed_items.pop(old.id, None)
        if entry.view is not None and entry.view.items != len(entry.items):
            entry.view = entry.view.model_copy(update={"items": len(entry.items)})
        return changed

    # ------------------------------------------------------------------ to the Shell

    def take(
        self, instance_id: str, *, with_view: bool = True
    ) -> tuple[AppView | None, list[sdk.ViewItem]] | None:
        """What is still to go of the instance (its latest view, if new and `with_view`, and
        its changed items in order), now marked gone; None when nothing is."""
        entry = self._instances.get(instance_id)
        view = None if entry is None or not with_view else entry.unpushed_view
        if entry is None or (view is None and not entry.unpushed_items):
            return None
        items = _ordered(entry.unpushed_items.values())
        entry.unpushed_items = {}
        if view is not None:
            entry.unpushed_view = None
        return view, items

    def waiting(self, instance_id: str) -> bool:
        """Whether anything of the instance (its view, or items) is still to go."""
        entry = self._instances.get(instance_id)
        return entry is not None and (entry.unpushed_view is not None or bool(entry.unpushed_items))

    def view_waiting(self, instance_id: str) -> bool:
        """Whether a view of the instance is still to go."""
        entry = self._instances.get(instance_id)
        return entry is not None and entry.unpushed_view is not None

    def view(self, instance_id: str) -> AppView | None:
        entry = self._instances.get(instance_id)
        return None if entry is None else entry.view

    def views(self) -> dict[str, AppView]:
        return {i: e.view for i, e in self._instances.items() if e.view is not None}

    def page(
        self, instance_id: str, before: tuple[int, str] | None = None, budget: int = PAGE_BYTES
    ) -> tuple[list[sdk.ViewItem], bool]:
        """The newest items shown before `before` (all, when None) that fit `budget` bytes
        (at least one), oldest first, and whether older ones remain."""
        entry = self._instances.get(instance_id)
        if entry is None:
            return [], False
        older = [
            i for i in _ordered(entry.items.values()) if before is None or (i.order, i.id) < before
        ]
        page: list[sdk.ViewItem] = []
        used = 0
        while older:
            size = entry.sizes.get(older[-1].id, 0)
            if page and used + size > budget:
                break
            page.append(older.pop())
            used += size
        page.reverse()
        return page, bool(older)

    def drop(self, instance_id: str) -> None:
        self._instances.pop(instance_id, None)

    def _entry(self, app_scope: str, instance_id: str) -> _Instance:
        entry = self._instances.get(instance_id)
        if entry is None or entry.app_scope != app_scope:
            entry = self._instances[instance_id] = _Instance(app_scope)
        return entry


def _check(document: dict[str, Any]) -> None:
    try:
        check_document(document)
    except WireLimitError as exc:
        raise ViewRefused(exc.code, "document bounds") from exc


def _ordered(items: Any) -> list[sdk.ViewItem]:
    return sorted(items, key=lambda i: (i.order, i.id))
