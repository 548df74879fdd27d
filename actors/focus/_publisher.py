"""Focus publishing what changed of its apps: a new inventory revision for the router, and the
Shells' app list.

After every change of the registry (install, enable, disable, update, rollback, revoke,
remove) and of the user's capability grants, `publish` asks the store for the inventory's
revision (`Inventory`: a new one only if the tools changed) and tells the router of a new one;
the Shells get their app list again either way (an app without tools changes only that). One
bump at a time (`_lock`), so the revision last set is the one for the content last seen.
"""

from __future__ import annotations

import trio

from lineup.actors.router.messages import InventoryChangedEvent
from lineup.actors.store.messages import (
    CapabilityGrantListReply,
    CapabilityGrantListRequest,
    InventoryRevisionBumpReply,
    InventoryRevisionBumpRequest,
)

from ._access import Access
from ._inventory import Inventory
from ._port import Port

__all__ = ["Publisher"]


class Publisher:
    """The inventory's revision and who hears of it (see the module's docstring)."""

    def __init__(self, port: Port, access: Access, inventory: Inventory) -> None:
        self._port = port
        self._access = access
        self.inventory = inventory
        self._lock = trio.Lock()

    async def read_grants(self) -> None:
        """Read the user's capability grants again (a tool may join or leave with them)."""
        self.inventory.capabilities.read(
            await self._port.store(CapabilityGrantListRequest(), CapabilityGrantListReply)
        )

    async def bump(self) -> bool:
        """Give the inventory's current content a revision (a new one only if it changed)."""
        reply = await self._port.store(
            InventoryRevisionBumpRequest(reason="inventory", bump_id=self.inventory.bump_id()),
            InventoryRevisionBumpReply,
        )
        return self.inventory.revised(reply.revision)

    async def publish(self) -> None:
        """After a change of the registry: the Shells' app list, and a new inventory revision
        if the tools changed."""
        self._port.soon(self._access.push_apps)
        async with self._lock:
            await self._republish()

    async def grants_changed(self) -> None:
        """The gateway changed a grant: the grants read and the bump in one order."""
        async with self._lock:
            await self.read_grants()
            await self._republish()

    async def _republish(self) -> None:
        # The caller holds `_lock`.
        if await self.bump():
            changed = InventoryChangedEvent(revision=self.inventory.revision)
            self._port.soon(self._port.tell_router, changed)
