"""The runtime's registry as focus answers the App Registry (`Registry`)."""

from __future__ import annotations

from dataclasses import dataclass, field

from lineup.facts.scopes import CHAT

from .. import protocol as p

__all__ = ["FakeRegistry"]


@dataclass
class FakeRegistry:
    """The runtime's registry as `focus.sdk.registry.list` answers it: set `apps`,
    `default_app`, `operations` and `catalog` (the local catalog's entries) as the test's
    runtime stands; `lists` counts the reads.
    `FakeRuntime` answers it to the App Registry alone, as the ACL's `RESERVED` row says: any
    other app is refused `permission_denied`."""

    apps: list[p.RegistryAppInfo] = field(default_factory=list)
    default_app: str = CHAT
    operations: list[p.AppOperationInfo] = field(default_factory=list)
    catalog: list[p.CatalogEntry] = field(default_factory=list)
    lists: int = 0

    def _list(self) -> p.RegistryListReply:
        self.lists += 1
        return p.RegistryListReply(
            apps=tuple(self.apps),
            default_app=self.default_app,
            operations=tuple(self.operations),
            catalog=tuple(self.catalog),
        )
