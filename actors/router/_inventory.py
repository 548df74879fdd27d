"""The inventory as the router knows it: focus's, cached by revision, and published to the
Agent once per revision.

Theory of operation
-------------------
Focus owns the inventory (the tools of the enabled apps, under one revision). The router
reads it once and keeps it until a check needs a fresher one (an Agent's call naming another
revision, a text for an app the cached one lacks). Publishing sends the Agent a full snapshot
(the Agent replaces, never merges) as one outbox row whose id is the revision, so a revision
is published once however often it is asked: at start, after each login, and whenever focus
says the inventory changed. The transport sends it ahead of the rows already waiting: a call
the Agent makes is refused unless it names the current revision, so the Agent must not learn
of one behind a backlog of results.
"""

from __future__ import annotations

import logging
from typing import Final

from lineup import wire
from lineup.actors.focus.messages import InventoryReply, InventoryRequest
from lineup.actors.kernel import Bus, LineUpError
from lineup.actors.store.messages import OutboxAppendReply, OutboxAppendRequest

from . import _ids as ids
from . import _outbox as outbox
from ._session import SessionSource

__all__ = ["Inventory"]

log = logging.getLogger("lineup.router.tools")

STORE_TIMEOUT: Final = 30.0


class Inventory:
    """Focus's inventory, cached; its publication to the Agent (the module's docstring)."""

    def __init__(self, bus: Bus, session: SessionSource) -> None:
        self.bus = bus
        self._session = session
        self._inventory: InventoryReply | None = None

    async def get(self, *, fresh: bool = False) -> InventoryReply:
        if self._inventory is None or fresh:
            self._inventory = await self.bus.request(
                "focus",
                InventoryRequest(),
                expect=InventoryReply,
                timeout=STORE_TIMEOUT,
                retry=True,
            )
        return self._inventory

    async def publish(self) -> None:
        """Send the current inventory to the Agent: a full snapshot (the Agent replaces, never
        merges), once per revision (the outbox id is the revision)."""
        try:
            inventory = await self.get(fresh=True)
            session = await self._session()
        except LineUpError as exc:
            log.info("router.inventory_not_published code=%s", exc.code.value)
            return
        outbox_id = ids.inventory_id(session.conversation_id, inventory.revision)
        body = outbox.envelope_of(
            session,
            wire.INVENTORY,
            # The wire's edge: the Agent gets each descriptor whole (`published`: its effective
            # call model, launch strategy, risk and idempotency, its app and its one id).
            wire.InventoryPayload(
                revision=inventory.revision,
                tools=tuple(t.published() for t in inventory.tools),
            ),
            outbox_id,
        )
        await self.bus.request(
            "store",
            OutboxAppendRequest(
                outbox_id=outbox_id,
                conversation_id=session.conversation_id,
                kind=wire.INVENTORY,
                body=body,
            ),
            expect=OutboxAppendReply,
            timeout=STORE_TIMEOUT,
            retry=True,
        )
        await outbox.wake(self.bus, ahead=True)  # sent before the backlog of results
