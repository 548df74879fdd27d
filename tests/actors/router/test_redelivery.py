"""Deliveries told again (`router/_redelivery.py`), over a real store: what a live app's inbox
has held too long is told to it once more, per app and with its instance, at most `MAX_TELLS`
times; what was acknowledged, is too fresh, or waits for an app with no live instance is not."""

from __future__ import annotations

from pathlib import Path
from typing import Final

import trio

from lineup.actors.router._redelivery import MAX_TELLS, Redelivery
from lineup.actors.store.messages import (
    InboxAckReply,
    InboxAckRequest,
    InboxPutReply,
    InboxPutRequest,
    InstanceListReply,
    InstanceListRequest,
    InstanceRow,
)
from lineup.sdk import protocol as sdk
from lineup.tests.actors.store._harness import StoreHarness, start_store

CONVERSATION: Final = "conv-1"


class Told:
    def __init__(self) -> None:
        self.events: list[tuple[str, list[tuple[str, str | None]]]] = []

    def __call__(self, app_scope: str, deliveries: list[sdk.Delivery]) -> None:
        self.events.append((app_scope, [(d.delivery_id, d.instance_id) for d in deliveries]))


async def logged_in() -> str | None:
    return CONVERSATION


async def never_logged_in() -> str | None:
    return None


async def put(store: StoreHarness, app_scope: str, delivery_id: str, instance: str | None) -> None:
    request = InboxPutRequest(
        app_scope=app_scope,
        conversation_id=CONVERSATION,
        instance_id=instance,
        delivery_id=delivery_id,
        body={"type": "lineup.v1.text"},
    )
    await store.ask(request, InboxPutReply)


async def live(store: StoreHarness) -> tuple[InstanceRow, ...]:
    """The live instances, as the router reads them for a round."""
    return (await store.ask(InstanceListRequest(), InstanceListReply)).instances


async def inboxes(nursery: trio.Nursery, tmp_path: Path) -> StoreHarness:
    """The chat and a whiteboard instance live; a delivery waiting in each of their inboxes,
    one acknowledged, and one for an app with no live instance."""
    store = await start_store(nursery, tmp_path / "data")
    await store.put_live_instances("chat", "chat")
    await store.put_live_instances("whiteboard", "whiteboard:1")
    await put(store, "chat", "m-1", None)
    await put(store, "chat", "m-2", None)
    await put(store, "whiteboard", "w-1", "whiteboard:1")
    await put(store, "closed-app", "c-1", None)
    acked = InboxAckRequest(app_scope="chat", conversation_id=CONVERSATION, delivery_id="m-2")
    await store.ask(acked, InboxAckReply)
    return store


async def test_what_a_live_apps_inbox_still_holds_is_told_again_at_most_max_tells_times(
    nursery: trio.Nursery, tmp_path: Path
) -> None:
    store = await inboxes(nursery, tmp_path)
    told = Told()
    redelivery = Redelivery(store.router, logged_in, told, stale_s=0.0)

    for _ in range(MAX_TELLS + 2):
        await redelivery.round(await live(store))

    once = [("chat", [("m-1", None)]), ("whiteboard", [("w-1", "whiteboard:1")])]
    assert told.events == once * MAX_TELLS


async def test_a_fresh_delivery_is_left_to_the_tell_already_on_its_way(
    nursery: trio.Nursery, tmp_path: Path
) -> None:
    store = await inboxes(nursery, tmp_path)
    told = Told()

    # Stored just now: not stale.
    await Redelivery(store.router, logged_in, told).round(await live(store))

    assert told.events == []


async def test_nothing_is_told_before_the_first_login(
    nursery: trio.Nursery, tmp_path: Path
) -> None:
    store = await inboxes(nursery, tmp_path)
    told = Told()

    await Redelivery(store.router, never_logged_in, told, stale_s=0.0).round(await live(store))

    assert told.events == []
