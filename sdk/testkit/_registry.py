"""The runtime's registry as focus answers the App Registry (`Registry`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Final

from lineup.actors.kernel import ErrorCode, LineUpError
from lineup.facts.scopes import CHAT

from .. import protocol as p

__all__ = ["FakeRegistry"]

REGISTRY_APP: Final = "app-registry"  # the one app `focus.sdk.registry.list` answers


@dataclass
class FakeRegistry:
    """The runtime's registry as `focus.sdk.registry.list` answers it: set `apps`,
    `default_app`, `operations` and `catalog` (the local catalog's entries) as the test's
    runtime stands; `lists` counts the reads.
    Answered to the App Registry (`app-registry`) alone, as the ACL does: any other app is
    refused `permission_denied`."""

    apps: list[p.RegistryAppInfo] = field(default_factory=list)
    default_app: str = CHAT
    operations: list[p.AppOperationInfo] = field(default_factory=list)
    catalog: list[p.CatalogEntry] = field(default_factory=list)
    lists: int = 0

    def _list(self, app_scope: str) -> p.RegistryListReply:
        if app_scope != REGISTRY_APP:
            raise LineUpError(ErrorCode.PERMISSION_DENIED, p.RegistryListRequest.TYPE)
        self.lists += 1
        return p.RegistryListReply(
            apps=tuple(self.apps),
            default_app=self.default_app,
            operations=tuple(self.operations),
            catalog=tuple(self.catalog),
        )
