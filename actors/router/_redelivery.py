"""Deliveries told again: what an app's inbox has held too long is told to the app once more.

Telling an app of a delivery is a fast path: the store holds it, and the app lists its inbox
when it starts. A running app can still miss one for good: a router killed between its commit
and its tell (the transport's replay of the page is then a duplicate, told to no one), a tell
that found no channel in time, an acknowledgement lost with the store. So each reconcile
round of the router reads the inboxes of the live apps in the current conversation and tells
each app what has waited there `STALE_S` or more, at most `MAX_TELLS` times per delivery
(about a minute); after that it waits for the app's next start or refresh. Apps take a
delivery once, by id (seed 004 §5.4), so a delivery told twice is shown once.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import Final

from lineup.actors.kernel import Bus, LineUpError
from lineup.actors.store.messages import InboxListReply, InboxRow, InstanceRow
from lineup.actors.store.messages import InboxListRequest as StoreInboxList
from lineup.sdk import protocol as sdk

__all__ = ["Redelivery", "delivery_of"]

log = logging.getLogger("lineup.router.redelivery")

STALE_S: Final = 5.0  # stored this long ago and not acknowledged: told again
MAX_TELLS: Final = 12  # per delivery, one per round
PAGE: Final = sdk.MAX_BATCH  # the oldest of one inbox, per round
STORE_TIMEOUT: Final = 10.0


class Redelivery:
    """Tells live apps again of deliveries they have not acknowledged (the module's docstring)."""

    def __init__(
        self,
        bus: Bus,
        conversation: Callable[[], Awaitable[str | None]],
        tell: Callable[[str, list[sdk.Delivery]], None],
        *,
        stale_s: float = STALE_S,
    ) -> None:
        self._bus = bus
        self._conversation = conversation
        self._tell = tell
        self._stale_s = stale_s
        self._told: dict[str, int] = {}  # delivery id -> times told again

    async def round(self, live: tuple[InstanceRow, ...]) -> None:
        """Tell the apps of the `live` instances (as the store has them) what waits for them."""
        try:
            conversation_id = await self._conversation()
            if conversation_id is None:
                return  # never logged in: nothing was delivered
            inboxes = sorted(
                {(row.app_scope, None) for row in live}
                | {(row.app_scope, row.instance_id) for row in live},
                key=lambda inbox: (inbox[0], inbox[1] or ""),
            )
            waiting: list[InboxRow] = []
            for app_scope, instance_id in inboxes:
                page = await self._bus.request(
                    "store",
                    StoreInboxList(
                        app_scope=app_scope,
                        conversation_id=conversation_id,
                        instance_id=instance_id,
                        limit=PAGE,
                    ),
                    expect=InboxListReply,
                    timeout=STORE_TIMEOUT,
                )
                waiting += page.rows
        except LineUpError as exc:
            log.info("router.redelivery_skipped code=%s", exc.code.value)
            return
        self._told = {row.delivery_id: self._told.get(row.delivery_id, 0) for row in waiting}
        stale_before = time.time() - self._stale_s
        by_app: dict[str, list[sdk.Delivery]] = {}
        for row in waiting:
            if row.created_at > stale_before or self._told[row.delivery_id] >= MAX_TELLS:
                continue
            self._told[row.delivery_id] += 1
            by_app.setdefault(row.app_scope, []).append(delivery_of(row))
        for app_scope, deliveries in by_app.items():
            log.info("router.told_again app=%s count=%d", app_scope, len(deliveries))
            self._tell(app_scope, deliveries)


def delivery_of(row: InboxRow) -> sdk.Delivery:
    """An inbox row as its app sees it (never the store's row)."""
    return sdk.Delivery(
        delivery_id=row.delivery_id,
        seq=row.seq,
        message_seq=row.message_seq,
        envelope=row.body,
        instance_id=row.instance_id,
        at=row.created_at if row.message_seq is not None else None,
    )
