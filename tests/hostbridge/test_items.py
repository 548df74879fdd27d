"""The hostbridge and a view's items: a Shell gets them in byte-bounded frames, the newest page
at its greeting and older pages when it asks; an item put again unchanged is not sent again; a
tree too large for a frame still shows the whole text."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, cast

import trio
import trio.testing
from trio_websocket import WebSocketConnection

from lineup.actors.focus.messages import (
    AppView,
    UiEventRequest,
    ViewItemsPageReply,
    ViewItemsPageRequest,
    ViewsReply,
    ViewsRequest,
)
from lineup.actors.kernel import Bus, Message
from lineup.hostbridge._markdown import markdown_tree
from lineup.hostbridge._server import ShellHub
from lineup.hostbridge._surface_book import SurfaceBook
from lineup.hostbridge._trees import INLINE_PARSE_LIMIT, MAX_TREE_BYTES, TreeCache
from lineup.hostbridge._views import ViewRelay
from lineup.hostbridge.messages import ViewItemsUpdatedEvent
from lineup.hostbridge.shell_protocol import MAX_ITEMS_FRAME_BYTES
from lineup.sdk.protocol import MAX_VIEW_ITEM_BYTES, ViewItem
from lineup.tests.support.shell import open_shell_socket, shell_at, tree_text

from .test_actor import TOKEN, FakeBus, from_peer, next_frame, start_hostbridge

BIG = "x" * 250_000


def item(n: int, markdown: str = "", state: str = "received") -> ViewItem:
    fields = {"author": "agent", "state": state, "markdown": markdown or f"m{n}", "at": 1.0}
    return ViewItem(id=f"m{n}", order=n, fields=fields)


class PagingBus(FakeBus):
    """Focus with one chat view and `items`, paged as focus pages (`pages[before]`)."""

    def __init__(self, pages: dict[tuple[int, str | None] | None, ViewItemsPageReply]) -> None:
        super().__init__()
        self.pages = pages

    async def request(self, peer: str, body: Message, **kwargs: Any) -> Message:
        if isinstance(body, ViewsRequest):
            self.requests.append(body)
            view = AppView(
                app_scope="chat", instance_id="chat", view={"kind": "chat.timeline"}, items=9
            )
            return ViewsReply(views=(view,), foreground="chat", instances=())
        if isinstance(body, ViewItemsPageRequest):
            self.requests.append(body)
            self.changed.set()
            before = None if body.before_order is None else (body.before_order, body.before_id)
            return self.pages[before]
        return await super().request(peer, body, **kwargs)


def page(items: list[ViewItem], more: bool) -> ViewItemsPageReply:
    return ViewItemsPageReply(app_scope="chat", instance_id="chat", items=tuple(items), more=more)


async def frames_until(ws: WebSocketConnection, last: str) -> list[dict[str, Any]]:
    frames = []
    while True:
        frame = await next_frame(ws)
        frames.append(frame)
        if frame["type"] == last:
            return frames


def items_of(frames: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The items of the `shell.items` frames, in order; each frame within its bound."""
    out = []
    for frame in frames:
        if frame["type"] == "shell.items":
            assert len(frame["items"]) == 1 or len(json.dumps(frame)) <= MAX_ITEMS_FRAME_BYTES
            out += frame["items"]
    return out


async def test_a_shell_gets_the_newest_page_in_bounded_frames_then_older_pages_when_it_asks(
    tmp_path: Path,
) -> None:
    newest = [item(n, BIG) for n in range(3, 8)] + [item(8, "short")]
    bus = PagingBus({None: page(newest, more=True), (3, "m3"): page([item(1), item(2)], False)})
    async with trio.open_nursery() as nursery:
        _, _, port = await start_hostbridge(nursery, tmp_path, bus)
        async with open_shell_socket(shell_at(port, TOKEN), max_message_size=2**24) as ws:
            await ws.send_message(json.dumps({"type": "shell.ready"}))
            greeting = await frames_until(ws, "shell.page")
            types = [f["type"] for f in greeting]
            assert types[:3] == ["shell.hello", "shell.apps", "shell.view"]
            assert types[-1] == "shell.page"
            assert 2 <= types.count("shell.items") == len(types) - 4  # 1.25 MB: two frames
            items = items_of(greeting)
            assert [i["id"] for i in items] == [f"m{n}" for n in range(3, 9)]
            assert [tree_text(i["tree"]) for i in items] == [BIG] * 5 + ["short"]  # whole
            assert "markdown" not in items[0]
            assert greeting[-1] == {"type": "shell.page", "instance_id": "chat", "more": True}

            earlier = {"kind": "timeline.earlier", "before_order": 3, "before_id": "m3"}
            await ws.send_message(
                json.dumps({"type": "ui.event", "instance_id": "chat", "event": earlier})
            )
            older = await frames_until(ws, "shell.page")
            assert [i["id"] for i in items_of(older)] == ["m1", "m2"]
            assert older[-1]["more"] is False
        nursery.cancel_scope.cancel()
    # Answered from focus's pages: the app was never asked.
    assert not any(isinstance(r, UiEventRequest) for r in bus.requests)


async def test_changed_items_go_on_with_their_stamps_in_the_order_they_came(
    tmp_path: Path,
) -> None:
    bus = PagingBus({None: page([item(1)], more=False)})
    async with trio.open_nursery() as nursery:
        actor, _, port = await start_hostbridge(nursery, tmp_path, bus)
        async with open_shell_socket(shell_at(port, TOKEN), max_message_size=2**24) as ws:
            await ws.send_message(json.dumps({"type": "shell.ready"}))
            await frames_until(ws, "shell.page")

            def put(*items: ViewItem) -> None:
                event = ViewItemsUpdatedEvent(app_scope="chat", instance_id="chat", items=items)
                actor.on_view_items(*from_peer("focus", event))

            put(stamped(item(2, BIG), 7), stamped(item(3), 8))
            put(stamped(item(3, state="sent"), 9))
            first, second = await next_frame(ws), await next_frame(ws)
            assert [(i["id"], i["state"], i["rev"]) for i in items_of([first])] == [
                ("m2", "received", 7),
                ("m3", "received", 8),
            ]
            assert [(i["id"], i["state"], i["rev"]) for i in items_of([second])] == [
                ("m3", "sent", 9)
            ]
        nursery.cancel_scope.cancel()


def stamped(view_item: ViewItem, rev: int) -> ViewItem:
    return view_item.model_copy(update={"rev": rev})


async def test_a_tree_too_large_for_a_frame_shows_the_whole_text_as_one_paragraph() -> None:
    """About two seconds quiet, over ten on a loaded machine, by what it is about: a hostile
    text of the wire's largest size is parsed once, whole, before its tree is found too big."""
    # About 9 bytes of tree per 4 bytes of text: within the wire's limit, past the tree's.
    units = (MAX_VIEW_ITEM_BYTES - 8192) // 4
    hostile = "*a* " * units
    # The tree grows by the same bytes with each unit: a thousand tell the whole's size,
    # without parsing a megabyte twice.
    per_thousand = len(json.dumps(markdown_tree("*a* " * 1001))) - len(
        json.dumps(markdown_tree("*a* "))
    )
    assert per_thousand * (units // 1000) > MAX_TREE_BYTES
    tree = await TreeCache().tree(hostile)
    assert tree == [{"t": "p", "c": [{"t": "text", "v": hostile}]}]


async def test_the_tree_cache_is_bounded_by_bytes_not_by_count() -> None:
    cache = TreeCache(budget=600_000)
    for n in range(4):
        await cache.tree(f"{n}" + "z" * 250_000)
    assert len(cache._trees) == 2  # the newest two fit; the older were dropped


async def test_items_that_find_nothing_being_pushed_reach_the_shells_queue_at_once() -> None:
    # No hop to the pushing task for a message to show; a long text's tree is still made on a
    # worker thread, and what comes behind it waits its turn (the order holds).
    hub = ShellHub()
    shell, frames = hub.join()
    relay = ViewRelay(cast(Bus, FakeBus()), hub, SurfaceBook())

    def told(*items: ViewItem) -> None:
        relay.items(ViewItemsUpdatedEvent(app_scope="chat", instance_id="chat", items=items))

    def ids(text: str) -> list[str]:
        return [i["id"] for i in json.loads(text)["items"]]

    async with trio.open_nursery() as nursery:
        nursery.start_soon(relay.push)
        await trio.testing.wait_all_tasks_blocked()
        told(item(1, "a *short* one"))
        assert ids(frames.receive_nowait()) == ["m1"]  # before anything else ran
        told(item(2, "long " * (INLINE_PARSE_LIMIT // 4)))
        told(item(3))
        with trio.fail_after(5):
            assert [ids(await frames.receive()) for _ in range(2)] == [["m2"], ["m3"]]
        nursery.cancel_scope.cancel()
    hub.leave(shell)
