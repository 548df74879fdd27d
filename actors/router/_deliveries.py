"""Telling apps of their deliveries: the fast path beside the inbox (the router's).

The store holds every delivery, and an app lists its inbox when it starts or refreshes; telling
it is only so it need not wait for that. One teller per app tells them in order, as few events
as it can: whatever piled up while the last event was on its way goes in the next one, so a
burst costs an event per batch, not per message. Past `PENDING_TELLS` waiting for one app the
newest are left to the inbox, and a tell that does not get through is left to it too (the
router's redelivery tells again what waits there too long, `_redelivery`).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Final

from lineup.actors.kernel import Bus, ErrorCode, Message
from lineup.sdk import protocol as sdk

__all__ = ["Deliveries"]

log = logging.getLogger("lineup.router")

NOTIFY_TIMEOUT: Final = 5.0  # an app that is not up by then finds the delivery in its inbox
# Deliveries waiting to be told to one app. Past this the fast path gives up on the newest
# (they stay in the inbox, which the app lists when it starts or refreshes).
PENDING_TELLS: Final = 4 * sdk.MAX_BATCH


class Deliveries:
    """The tellers, one per app at work; `soon(fn, *args)` runs one in the router's nursery."""

    def __init__(self, bus: Bus, soon: Callable[..., None]) -> None:
        self.bus = bus
        self._soon = soon
        self._untold: dict[str, list[sdk.Delivery]] = {}  # per app at work: not yet told
        # Told of every delivery queued for an app (its Surfaces that subscribed: the router's
        # `_surface_messages`).
        self.on_told: Callable[[str, list[sdk.Delivery]], None] | None = None

    def tell(self, app_scope: str, deliveries: list[sdk.Delivery]) -> None:
        """Queue persisted deliveries for their app. One teller per app tells them in order,
        as few events as it can: whatever piled up while the last event was on its way goes
        in the next one, so a burst costs an event per batch, not per message."""
        if self.on_told is not None:
            self.on_told(app_scope, deliveries)
        untold = self._untold.get(app_scope)
        if untold is None:
            untold = self._untold[app_scope] = []
            self._soon(self._teller, app_scope, untold)
        room = PENDING_TELLS - len(untold)
        if room < len(deliveries):
            log.info("router.app_not_told app=%s code=%s", app_scope, ErrorCode.MAILBOX_FULL.value)
        untold.extend(deliveries[: max(0, room)])

    async def _teller(self, app_scope: str, untold: list[sdk.Delivery]) -> None:
        try:
            while untold:
                batch = tuple(untold[: sdk.MAX_BATCH])
                del untold[: len(batch)]
                await self.tell_app(app_scope, sdk.DeliveriesEvent(deliveries=batch))
        finally:
            # Cancelled (shutting down): what is left is in the inbox all the same.
            del self._untold[app_scope]

    async def tell_app(self, app_scope: str, event: Message) -> None:
        # Not told: it finds the delivery in its inbox when it starts.
        code = await self.bus.tell(f"miniapp:{app_scope}", event, timeout=NOTIFY_TIMEOUT)
        if code is not None:
            log.info("router.app_not_told app=%s code=%s", app_scope, code.value)
