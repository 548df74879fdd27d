"""The app's view and items as focus keeps them (`Ui.render`, `Ui.put_items`)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from lineup.actors.kernel import ErrorCode, LineUpError, Message
from lineup.facts.views import ITEM_COMPONENTS, MAX_VIEW_KEYS, RUNTIME_KINDS_PREFIX, TRUSTED_KINDS

from .. import protocol as p

__all__ = ["FakeUi"]


@dataclass
class FakeUi:
    """Every view the app rendered, in order, as `(instance_id, view)`, and each instance's
    items as focus keeps them (`items[instance_id][item_id]`); `puts` counts item requests."""

    renders: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    items: dict[str, dict[str, p.ViewItem]] = field(default_factory=dict)
    puts: int = 0

    @property
    def last(self) -> dict[str, Any] | None:
        """The last view, as the Shell shows it: with the instance's items, in order, under
        `items` (each its fields and `id`) when it has any."""
        if not self.renders:
            return None
        instance_id, view = self.renders[-1]
        items = self.ordered(instance_id)
        if not items:
            return view
        return {**view, "items": [{"id": i.id, **i.fields} for i in items]}

    def ordered(self, instance_id: str) -> list[p.ViewItem]:
        """The instance's items in the order the Shell shows them."""
        return sorted(self.items.get(instance_id, {}).values(), key=lambda i: (i.order, i.id))

    def _answer(
        self,
        request: p.ViewUpdateRequest | p.ViewItemsPutRequest,
        instances: set[str],
        app_scope: str,
    ) -> Message:
        """Focus's answer to `app_scope`'s view or items request for one of `instances`.
        Focus trusts the catalogue's apps with the components they ship; the fake takes an
        app whose scope owns a trusted kind for the catalogue's own."""
        if isinstance(request, p.ViewUpdateRequest):
            if request.instance_id not in instances:
                raise LineUpError(ErrorCode.APP_INSTANCE_NOT_FOUND, request.instance_id)
            if len(request.view) > MAX_VIEW_KEYS:
                raise LineUpError(ErrorCode.INVALID_ARGUMENTS, "view too wide")
            compact = json.dumps(request.view, separators=(",", ":"), ensure_ascii=False)
            if len(compact.encode()) > p.MAX_VIEW_BYTES:
                raise LineUpError(ErrorCode.INVALID_ARGUMENTS, "view too large")
            if not _may_show(app_scope, request.view.get("kind")):
                raise LineUpError(ErrorCode.PERMISSION_DENIED, "trusted component")
            self.renders.append((request.instance_id, request.view))
            return p.CommandReceipt(id=request.instance_id)
        if request.instance_id not in instances:
            raise LineUpError(ErrorCode.APP_INSTANCE_NOT_FOUND, request.instance_id)
        if all(TRUSTED_KINDS[kind] != app_scope for kind in ITEM_COMPONENTS):
            raise LineUpError(ErrorCode.PERMISSION_DENIED, "items")
        if len(request.model_dump_json().encode()) > p.MAX_VIEW_ITEMS_PUT_BYTES + 1024:
            raise LineUpError(ErrorCode.INVALID_ARGUMENTS, "items too large")
        self.puts += 1
        kept = self.items.setdefault(request.instance_id, {})
        kept.update((item.id, item) for item in request.items)
        for item in sorted(kept.values(), key=lambda i: (i.order, i.id))[: -p.MAX_VIEW_ITEMS]:
            del kept[item.id]
        return p.CommandReceipt(id=request.instance_id)


def _may_show(app_scope: str, kind: object) -> bool:
    """As focus's `ViewBook.may_show`: none of the runtime's own kinds, and a trusted kind
    only for the app that ships its component."""
    if isinstance(kind, str) and kind.startswith(RUNTIME_KINDS_PREFIX):
        return False
    owner = TRUSTED_KINDS.get(kind) if isinstance(kind, str) else None
    return owner is None or owner == app_scope
