"""Focus's views and items (`actors/focus/_views.py`, and the actor's view section): bounds,
trust, paging, coalescing and the push rate."""

from __future__ import annotations

import inspect
import itertools
from pathlib import Path
from typing import Any, cast

import pytest
import trio
import trio.testing

from lineup.actors.focus import FocusActor
from lineup.actors.focus._view_service import VIEW_PUSH_RATE
from lineup.actors.focus._views import PAGE_BYTES, ViewBook, ViewRefused
from lineup.actors.focus.messages import ViewsReply, ViewsRequest
from lineup.actors.kernel import (
    ActorContext,
    ActorKind,
    AuditRecord,
    Bus,
    Envelope,
    ErrorCode,
    Identity,
    LineUpError,
    Message,
)
from lineup.hostbridge.messages import ViewItemsUpdatedEvent, ViewUpdatedEvent
from lineup.sdk import protocol as p

TRUSTED = frozenset({"chat", "task-dashboard"})
BIG = "x" * 250_000


def item(n: int, markdown: str = "m", **fields: Any) -> p.ViewItem:
    return p.ViewItem(id=f"m{n:03}", order=n, fields={"markdown": markdown, **fields})


def book_with(*items: p.ViewItem) -> ViewBook:
    book = ViewBook(TRUSTED)
    book.set_view("chat", "chat", {"kind": "chat.timeline"})
    book.put_items("chat", "chat", items)
    return book


# ------------------------------------------------------------------ bounds and trust


def test_a_view_over_64_kib_is_refused_envelope_too_large_and_one_just_under_is_taken() -> None:
    book = ViewBook(TRUSTED)
    overhead = len('{"kind":"probe","pad":""}')
    book.set_view("probe", "p", {"kind": "probe", "pad": "a" * (p.MAX_VIEW_BYTES - overhead)})
    with pytest.raises(ViewRefused) as refused:
        book.set_view("probe", "p", {"kind": "probe", "pad": "a" * (p.MAX_VIEW_BYTES + 1)})
    assert refused.value.code is ErrorCode.ENVELOPE_TOO_LARGE
    # Counted as it travels, UTF-8: 22,000 three-byte characters are 66,000 bytes.
    with pytest.raises(ViewRefused) as refused:
        book.set_view("probe", "p", {"kind": "probe", "pad": "€" * 22_000})
    assert refused.value.code is ErrorCode.ENVELOPE_TOO_LARGE
    view = book.view("p")
    assert view is not None and len(view.view["pad"]) == p.MAX_VIEW_BYTES - overhead


@pytest.mark.parametrize(
    ("scope", "kind", "allowed"),
    [
        ("chat", "chat.timeline", True),
        ("task-dashboard", "task.dashboard", True),
        ("task-dashboard", "chat.timeline", False),  # bundled, but not that component's app
        ("chat", "task.dashboard", False),
        ("probe", "task.dashboard", False),  # configured / dev / installed
        ("probe", "chat.timeline", False),
        ("probe", "probe", True),  # not a trusted kind: the Shell draws no component for it
        ("probe", "card", True),  # the Shell's generic card, any app's (lineup.sdk.card)
        ("task-dashboard", "card", True),
        ("probe", None, True),
    ],
)
def test_a_trusted_kind_is_taken_only_from_the_catalogue_app_that_ships_it(
    scope: str, kind: str | None, allowed: bool
) -> None:
    book = ViewBook(TRUSTED)
    view = {} if kind is None else {"kind": kind}
    if allowed:
        book.set_view(scope, "i", view)
        assert book.view("i") is not None
    else:
        with pytest.raises(ViewRefused) as refused:
            book.set_view(scope, "i", view)
        assert refused.value.code is ErrorCode.PERMISSION_DENIED
        assert book.view("i") is None


def test_a_configured_app_with_a_bundled_scope_gets_no_trusted_component() -> None:
    book = ViewBook(frozenset({"chat"}))  # task-dashboard was replaced by configuration
    with pytest.raises(ViewRefused) as refused:
        book.set_view("task-dashboard", "t", {"kind": "task.dashboard"})
    assert refused.value.code is ErrorCode.PERMISSION_DENIED


def test_items_are_taken_only_from_the_app_whose_component_shows_them() -> None:
    for scope in ("probe", "task-dashboard"):
        with pytest.raises(ViewRefused) as refused:
            ViewBook(TRUSTED).put_items(scope, "i", (item(1),))
        assert refused.value.code is ErrorCode.PERMISSION_DENIED


def test_an_item_over_its_bound_is_refused_and_nothing_of_its_batch_is_taken() -> None:
    book = book_with()
    with pytest.raises(ViewRefused) as refused:
        book.put_items("chat", "chat", (item(1), item(2, "x" * p.MAX_VIEW_ITEM_BYTES)))
    assert refused.value.code is ErrorCode.ENVELOPE_TOO_LARGE
    assert book.page("chat") == ([], False)


def test_a_message_as_large_as_the_wire_allows_fits_an_item() -> None:
    book = book_with(item(1, "y" * (256 * 1024 - 200)))
    assert len(book.page("chat")[0]) == 1


# ------------------------------------------------------------------ paging


def test_the_newest_page_holds_what_fits_the_budget_and_older_pages_follow_to_the_first() -> None:
    book = book_with(*(item(n, BIG) for n in range(10)), item(10, "short"))
    newest, more = book.page("chat")
    assert [i.id for i in newest] == ["m007", "m008", "m009", "m010"]  # 3 x 250 KB + short
    assert more
    seen = [i.id for i in newest]
    before = (newest[0].order, newest[0].id)
    while more:
        older, more = book.page("chat", before)
        assert 1 <= len(older) <= 3
        seen = [i.id for i in older] + seen
        before = (older[0].order, older[0].id)
    assert seen == [f"m{n:03}" for n in range(11)]


def test_a_page_holds_at_least_one_item_whatever_the_budget() -> None:
    book = book_with(item(1, BIG), item(2, BIG))
    assert [i.id for i in book.page("chat", budget=10)[0]] == ["m002"]


def test_every_page_stays_within_its_budget_however_many_items_there_are() -> None:
    book = book_with(*(item(n, "z" * 100_000) for n in range(200)))
    before = None
    more = True
    while more:
        page, more = book.page("chat", before)
        assert sum(len(i.model_dump_json()) for i in page) <= PAGE_BYTES
        before = (page[0].order, page[0].id)


def test_the_newest_items_are_kept_up_to_the_bound() -> None:
    book = book_with(*(item(n) for n in range(p.MAX_VIEW_ITEMS + 10)))
    kept, more = book.page("chat")
    everything = kept
    while more:
        older, more = book.page("chat", (everything[0].order, everything[0].id))
        everything = older + everything
    assert len(everything) == p.MAX_VIEW_ITEMS
    assert everything[0].id == "m010"


def test_an_item_put_again_unchanged_is_not_pushed_again_and_a_changed_one_is() -> None:
    book = book_with(item(1), item(2))
    assert book.take("chat") is not None
    assert book.put_items("chat", "chat", (item(1), item(2))) == 0
    assert book.take("chat") is None
    assert book.put_items("chat", "chat", (item(1), item(2, state="sent"))) == 1
    change = book.take("chat")
    assert change is not None and change[0] is None and [i.id for i in change[1]] == ["m002"]


def test_items_pushed_before_the_instance_had_a_view_go_again_with_its_first_view() -> None:
    """A restarted focus holds no view: its apps put their items again, and a message that
    comes meanwhile is put and pushed before the view. A Shell that greeted then was listed no
    view of the instance, so no page of its items: the first view brings them."""
    book = ViewBook(TRUSTED)
    book.put_items("chat", "chat", (item(1), item(2)))
    change = book.take("chat")
    assert change is not None and [i.id for i in change[1]] == ["m001", "m002"]
    book.set_view("chat", "chat", {"kind": "chat.timeline"})
    change = book.take("chat")
    assert change is not None
    view, items = change
    assert view is not None and [i.id for i in items] == ["m001", "m002"]
    # Only the first view does: a later one goes alone.
    book.set_view("chat", "chat", {"kind": "chat.timeline", "n": 1})
    assert book.take("chat") == (book.view("chat"), [])


def test_what_waits_to_be_pushed_coalesces_to_the_latest_view_and_item_versions() -> None:
    book = ViewBook(TRUSTED)
    for n in range(50):
        book.set_view("chat", "chat", {"kind": "chat.timeline", "n": n})
        book.put_items("chat", "chat", (item(1, f"v{n}"),))
    change = book.take("chat")
    assert change is not None
    view, items = change
    assert view is not None and view.view["n"] == 49
    assert [(i.id, i.fields["markdown"]) for i in items] == [("m001", "v49")]
    assert book.take("chat") is None


# ------------------------------------------------------------------ the actor


class CountingBus:
    def __init__(self) -> None:
        self.told: list[Message] = []
        self.audits: list[AuditRecord] = []
        self.changed = trio.Event()

    async def tell(self, peer: str, body: Message, **kwargs: Any) -> None:
        assert peer == "hostbridge"
        self.told.append(body)
        self.changed.set()
        self.changed = trio.Event()
        await trio.lowlevel.checkpoint()

    async def until_told(self, count: int) -> None:
        with trio.fail_after(5):
            while len(self.told) < count:
                await self.changed.wait()

    def audit(self, record: AuditRecord) -> None:
        self.audits.append(record)


def focus_with_chat(bus: CountingBus) -> FocusActor:
    ctx = ActorContext(
        Identity(ActorKind.FOCUS, "focus"), 1, Path("/nonexistent"), {}, cast(Bus, bus)
    )
    focus = FocusActor(ctx)
    focus.instances.recover((), (), runtime_restarted=True)  # the chat, born and up
    return focus


def envelope(scope: str, body: Message) -> Envelope:
    sender = Identity(ActorKind.MINIAPP, f"miniapp:{scope}")
    return Envelope(sender, body, 1, True)


async def answered(
    focus: FocusActor, request: p.ViewItemsPutRequest, scope: str = "chat"
) -> p.CommandReceipt:
    """The put's answer, as the bus gets it (a handler may answer at once, or await)."""
    outcome = focus.on_view_items(request, envelope(scope, request))
    return await outcome if inspect.isawaitable(outcome) else outcome


async def test_an_item_put_while_nothing_is_pushed_reaches_the_hostbridge_before_the_answer() -> (
    None
):
    # No task to start, and the app's next steps wait behind the push (its acknowledgement
    # would otherwise race it for the CPU, on the message's way to the Shell).
    bus = CountingBus()
    focus = focus_with_chat(bus)
    async with trio.open_nursery() as nursery:
        focus.port.nursery = nursery
        items = p.ViewItemsPutRequest(instance_id="chat", items=(item(1),))
        receipt = await answered(focus, items)
        assert receipt.changed
        assert [type(m) for m in bus.told] == [ViewItemsUpdatedEvent]  # before the answer
        # What is put while that push is on its way goes by a pusher, after it.
        again = p.ViewItemsPutRequest(instance_id="chat", items=(item(2),))
        async with trio.open_nursery() as puts:
            puts.start_soon(answered, focus, items.model_copy(update={"items": (item(3),)}))
            puts.start_soon(answered, focus, again)
        await bus.until_told(3)
        await trio.testing.wait_all_tasks_blocked()
        told = [i.id for m in bus.told if isinstance(m, ViewItemsUpdatedEvent) for i in m.items]
        assert sorted(told) == ["m001", "m002", "m003"]
        nursery.cancel_scope.cancel()


async def test_two_puts_of_an_item_read_together_are_taken_in_their_order_whatever_runs_first() -> (
    None
):
    """The bus calls each handler as its frame is read, and runs what a handler leaves to
    await as a task, in either order (trio's): the puts are taken by the handlers, only the
    push is left to a task, so the item the app put last is the one shown."""
    bus = CountingBus()
    focus = focus_with_chat(bus)
    puts = [
        p.ViewItemsPutRequest(instance_id="chat", items=(item(1, markdown=text),))
        for text in ("sending", "sent")
    ]
    outcomes = [focus.on_view_items(put, envelope("chat", put)) for put in puts]
    async with trio.open_nursery() as nursery:
        focus.port.nursery = nursery
        for outcome in reversed(outcomes):  # the later one's task first
            if inspect.isawaitable(outcome):
                await outcome
        await trio.testing.wait_all_tasks_blocked()
        nursery.cancel_scope.cancel()
    told = [i for m in bus.told if isinstance(m, ViewItemsUpdatedEvent) for i in m.items]
    assert told[-1].fields["markdown"] == "sent"
    assert focus.view_book.page("chat")[0][-1].fields["markdown"] == "sent"


async def test_views_rendered_without_pause_reach_the_hostbridge_at_most_30_times_a_second(
    autojump_clock: trio.testing.MockClock,
) -> None:
    bus = CountingBus()
    focus = focus_with_chat(bus)
    async with trio.open_nursery() as nursery:
        focus.port.nursery = nursery
        start = trio.current_time()
        n = 0
        while trio.current_time() - start < 2.0:  # 2 s of an app rendering every 1 ms
            view = {"kind": "chat.timeline", "n": n}
            request = p.ViewUpdateRequest(instance_id="chat", view=view)
            focus.on_view_update(request, envelope("chat", request))
            n += 1
            await trio.sleep(0.001)
        await trio.sleep(1)  # the last one still goes
        nursery.cancel_scope.cancel()
    pushed = [m for m in bus.told if isinstance(m, ViewUpdatedEvent)]
    assert 2 * VIEW_PUSH_RATE - 2 <= len(pushed) <= 2 * VIEW_PUSH_RATE + 1
    assert pushed[-1].view["n"] == n - 1  # coalesced: the latest is what stays shown
    assert n > 1000
    # Each stamped when taken, so that the hostbridge keeps the newest of a push and a reply.
    assert all(a.version < b.version for a, b in itertools.pairwise(pushed))
    shown = focus.view_book.view("chat")
    assert shown is not None and shown.version == pushed[-1].version


async def test_items_are_not_held_back_by_the_pace_of_views(
    autojump_clock: trio.testing.MockClock,
) -> None:
    bus = CountingBus()
    focus = focus_with_chat(bus)
    async with trio.open_nursery() as nursery:
        focus.port.nursery = nursery
        for n in range(2):  # the second view must wait 1/30 s
            request = p.ViewUpdateRequest(
                instance_id="chat", view={"kind": "chat.timeline", "n": n}
            )
            focus.on_view_update(request, envelope("chat", request))
            await trio.testing.wait_all_tasks_blocked()
        start = trio.current_time()
        items = p.ViewItemsPutRequest(instance_id="chat", items=(item(1),))
        await answered(focus, items)
        await trio.testing.wait_all_tasks_blocked()
        assert trio.current_time() == start  # no time passed: the item went at once
        assert tuple(type(m) for m in bus.told) == (ViewUpdatedEvent, ViewItemsUpdatedEvent)
        await bus.until_told(3)
        assert isinstance(bus.told[2], ViewUpdatedEvent) and bus.told[2].view["n"] == 1
        assert trio.current_time() - start <= 1 / VIEW_PUSH_RATE  # on its turn, not later
        nursery.cancel_scope.cancel()


async def test_an_update_on_its_own_is_pushed_at_once() -> None:
    bus = CountingBus()
    focus = focus_with_chat(bus)
    async with trio.open_nursery() as nursery:
        focus.port.nursery = nursery
        request = p.ViewUpdateRequest(instance_id="chat", view={"kind": "chat.timeline"})
        focus.on_view_update(request, envelope("chat", request))
        items = p.ViewItemsPutRequest(instance_id="chat", items=(item(1), item(2)))
        await answered(focus, items)
        await trio.testing.wait_all_tasks_blocked()
        assert tuple(type(m) for m in bus.told) == (ViewUpdatedEvent, ViewItemsUpdatedEvent)
        pushed = bus.told[1]
        assert isinstance(pushed, ViewItemsUpdatedEvent)
        assert [i.id for i in pushed.items] == ["m001", "m002"]
        nursery.cancel_scope.cancel()


async def test_a_refused_view_is_audited_with_its_bound_and_answered_by_who_is_at_fault() -> None:
    bus = CountingBus()
    focus = focus_with_chat(bus)
    focus.instances.launch("probe:1", "probe", foreground=False, call_id="1")
    focus.instances.ready("probe:1")
    large = p.ViewUpdateRequest(instance_id="probe:1", view={"pad": "a" * 70_000})
    trusted = p.ViewUpdateRequest(instance_id="probe:1", view={"kind": "task.dashboard"})
    items = p.ViewItemsPutRequest(instance_id="probe:1", items=(item(1),))
    denied = "permission_denied"
    cases: list[tuple[p.ViewUpdateRequest | p.ViewItemsPutRequest, str, str]] = [
        (large, "envelope_too_large", "invalid_arguments"),
        (trusted, denied, denied),
        (items, denied, denied),
    ]

    async def send(request: p.ViewUpdateRequest | p.ViewItemsPutRequest) -> None:
        if isinstance(request, p.ViewUpdateRequest):
            focus.on_view_update(request, envelope("probe", request))
        else:
            await answered(focus, request, "probe")

    for request, audited, code in cases:
        with pytest.raises(LineUpError) as refused:
            await send(request)
        assert refused.value.code.value == code
        row = bus.audits[-1]
        assert (row.event, row.code, row.peer, row.subject_id, row.message_type) == (
            "focus.view_refused",
            audited,
            "miniapp:probe",
            "probe:1",
            request.TYPE,
        )
    assert focus.view_book.view("probe:1") is None
    assert bus.told == []


def test_the_views_a_reconnecting_shell_gets_come_in_replies_of_bounded_size() -> None:
    bus = CountingBus()
    focus = focus_with_chat(bus)
    for n in range(20):  # 20 views of 60 KiB: 1.2 MiB, more than one reply may hold
        instance = f"probe:{n}"
        focus.instances.launch(instance, "probe", foreground=False, call_id=str(n))
        focus.instances.ready(instance)
        request = p.ViewUpdateRequest(instance_id=instance, view={"pad": "v" * 60_000})
        focus.on_view_update(request, envelope("probe", request))
    seen: list[str] = []
    offset: int | None = 0
    while offset is not None:
        reply = focus.on_views(ViewsRequest(offset=offset), envelope("probe", ViewsRequest()))
        assert isinstance(reply, ViewsReply)
        assert sum(len(v.model_dump_json()) for v in reply.views) <= 600_000
        seen += [v.instance_id for v in reply.views]
        offset = reply.next_offset
    assert sorted(seen) == sorted(f"probe:{n}" for n in range(20))


def test_a_views_reply_carries_the_stamp_of_the_app_list_it_holds() -> None:
    """The hostbridge keeps the newer of a told list and a greeting's reply by this stamp."""
    focus = focus_with_chat(CountingBus())
    before = focus.access.app_list().version
    reply = focus.on_views(ViewsRequest(), envelope("probe", ViewsRequest()))
    after = focus.access.app_list().version
    assert isinstance(reply, ViewsReply)
    assert before < reply.apps_version < after


def test_each_change_gets_a_higher_stamp_also_in_a_focus_that_started_later() -> None:
    book = book_with(item(1), item(2))
    first = {i.id: i.rev for i in book.page("chat")[0]}
    book.put_items("chat", "chat", (item(1, state="sent"), item(2)))  # m2 as it was
    second = {i.id: i.rev for i in book.page("chat")[0]}
    assert second["m001"] > first["m001"] and second["m002"] == first["m002"]
    restarted = book_with(item(1, state="sent"))  # a new focus: the same content again
    assert restarted.page("chat")[0][0].rev > second["m001"]  # the Shell takes it
    # What an app sends as a stamp is not what counts.
    forged = ViewBook(TRUSTED)
    forged.put_items("chat", "chat", (item(1).model_copy(update={"rev": p.MAX_ITEM_ORDER}),))
    assert forged.page("chat")[0][0].rev < p.MAX_ITEM_ORDER
