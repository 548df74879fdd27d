"""The SDK hands an app the deliveries queued together in one `on_deliveries`, in order, and
never moves another event across them; a delivery whose hook was refused is offered again from
the inbox; a request the bus refuses `rate_limited` is asked again after a pause
(`sdk/_host.py`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from lineup import sdk
from lineup.actors.kernel import ActorKind, ErrorCode, Identity, LineUpError, Message
from lineup.actors.kernel.actor import ActorContext
from lineup.sdk import _host, testkit
from lineup.sdk import protocol as p


def delivery(n: int) -> p.DeliveryEvent:
    return p.DeliveryEvent(delivery=p.Delivery(delivery_id=f"d{n}", seq=n, envelope={}))


def host_with(*events: Message) -> _host.MiniAppHost:
    # Only the event queue is used here: no process, no bus.
    host = _host.MiniAppHost.__new__(_host.MiniAppHost)
    host._events_in, host._events_out = trio.open_memory_channel[Message](len(events) + 1)
    for event in events:
        host._events_in.send_nowait(event)
    return host


def test_deliveries_queued_together_are_taken_at_once_up_to_the_next_other_event() -> None:
    refresh = p.ViewRefreshEvent()
    host = host_with(delivery(2), delivery(3), refresh, delivery(4))

    deliveries, held = host._waiting_deliveries(delivery(1))

    assert [d.delivery_id for d in deliveries] == ["d1", "d2", "d3"]
    assert held is refresh
    assert host._events_out.receive_nowait() == delivery(4)


def test_a_burst_is_cut_at_its_bound_and_the_rest_stays_queued() -> None:
    host = host_with(*(delivery(n) for n in range(1, _host.DELIVERY_BURST + 5)))

    deliveries, held = host._waiting_deliveries(delivery(0))

    assert len(deliveries) == _host.DELIVERY_BURST
    assert held is None
    assert host._events_out.receive_nowait() == delivery(_host.DELIVERY_BURST)


def test_only_an_app_that_overrides_on_deliveries_gets_bursts() -> None:
    class Plain(sdk.MiniApp):
        pass

    class Bursty(sdk.MiniApp):
        async def on_deliveries(self, deliveries: tuple[p.Delivery, ...]) -> None:
            pass

    assert (_host._takes_bursts(Plain()), _host._takes_bursts(Bursty())) == (False, True)


def deliveries(first: int, count: int) -> p.DeliveriesEvent:
    return p.DeliveriesEvent(
        deliveries=tuple(
            p.Delivery(delivery_id=f"d{n}", seq=n, envelope={}) for n in range(first, first + count)
        )
    )


def test_a_batch_event_is_taken_whole_with_the_single_ones_around_it() -> None:
    refresh = p.ViewRefreshEvent()
    host = host_with(deliveries(2, 3), delivery(5), refresh)

    taken, held = host._waiting_deliveries(delivery(1))

    assert [d.delivery_id for d in taken] == ["d1", "d2", "d3", "d4", "d5"]
    assert held is refresh


def test_a_batch_event_past_the_bound_is_cut_and_its_rest_handed_next_in_order() -> None:
    host = host_with(deliveries(10, _host.DELIVERY_BURST))

    taken, held = host._waiting_deliveries(deliveries(0, 10))

    assert [d.seq for d in taken] == list(range(_host.DELIVERY_BURST))
    assert isinstance(held, p.DeliveriesEvent)
    assert [d.seq for d in held.deliveries] == list(
        range(_host.DELIVERY_BURST, _host.DELIVERY_BURST + 10)
    )


async def test_acknowledging_many_sends_one_request_per_inbox_and_reports_what_was_removed() -> (
    None
):
    runtime = testkit.FakeRuntime("probe", "i-1")
    mine = [runtime.inbox.put({}, f"c{n}") for n in range(3)]
    theirs = [runtime.inbox.put({}, f"i{n}", instance_id="i-1") for n in range(2)]
    gone = p.Delivery(delivery_id="gone", seq=99, envelope={})
    sent: list[p.InboxAckManyRequest] = []
    call = runtime.call

    async def recording(peer: str, request: Message, expect: type[Any]) -> Any:
        if isinstance(request, p.InboxAckManyRequest):
            sent.append(request)
        return await call(peer, request, expect)

    runtime.call = recording  # type: ignore[method-assign]

    acked = await runtime.context().inbox.acknowledge_many([*mine, *theirs, mine[0], gone])

    assert acked == {"c0", "c1", "c2", "i0", "i1"}
    assert [(r.instance_id, r.delivery_ids) for r in sent] == [
        (None, ("c0", "c1", "c2", "gone")),
        ("i-1", ("i0", "i1")),
    ]
    assert runtime.inbox.pending == {}


class _Throttling:
    """A bus that refuses the first `refusals` requests `rate_limited`, then answers."""

    def __init__(self, refusals: int) -> None:
        self.refusals = refusals
        self.asked = 0

    async def request(self, peer: str, body: Message, **kwargs: Any) -> p.CommandReceipt:
        self.asked += 1
        if self.asked <= self.refusals:
            raise LineUpError(ErrorCode.RATE_LIMITED, body.TYPE)
        return p.CommandReceipt(id="c1")


def host_on(bus: Any) -> _host.MiniAppHost:
    host = _host.MiniAppHost.__new__(_host.MiniAppHost)
    host.bus = bus
    return host


async def test_a_rate_limited_request_is_asked_again_after_a_pause_not_dropped(
    autojump_clock: trio.testing.MockClock,
) -> None:
    # Dropping it left a call taken (or handed over) and never completed, under load.
    bus = _Throttling(refusals=3)
    started = trio.current_time()
    receipt = await host_on(bus).call("router", p.ToolAcceptRequest(call_id="c1"), p.CommandReceipt)
    assert (receipt.id, bus.asked) == ("c1", 4)
    assert trio.current_time() - started >= 0.07  # 10 + 20 + 40 ms of pauses


async def test_a_rate_limit_that_outlasts_the_call_timeout_is_raised(
    autojump_clock: trio.testing.MockClock,
) -> None:
    bus = _Throttling(refusals=10_000)
    with pytest.raises(LineUpError) as refused:
        await host_on(bus).call("router", p.ToolAcceptRequest(call_id="c1"), p.CommandReceipt)
    assert refused.value.code is ErrorCode.RATE_LIMITED
    assert trio.current_time() <= _host.CALL_TIMEOUT


class Acknowledging(sdk.MiniApp):
    """Shows each delivery once (by id) and acknowledges what it was handed."""

    handed: list[list[str]] = []

    async def start(self, app: sdk.AppContext) -> None:
        self.app = app

    async def on_deliveries(self, deliveries: tuple[p.Delivery, ...]) -> None:
        type(self).handed.append([d.delivery_id for d in deliveries])
        await self.app.inbox.acknowledge_many(deliveries)


class _RuntimeBus:
    """The host's bus, answered by a `FakeRuntime`."""

    def __init__(self, runtime: testkit.FakeRuntime) -> None:
        self.runtime = runtime

    async def request(self, peer: str, body: Message, *, expect: type[Any], **kw: Any) -> Any:
        return await self.runtime.call(peer, body, expect)


async def hosted(
    nursery: trio.Nursery, runtime: testkit.FakeRuntime, tmp_path: Path
) -> _host.MiniAppHost:
    Acknowledging.handed = []
    ctx = ActorContext(
        identity=Identity(ActorKind.MINIAPP, f"miniapp:{runtime.app_scope}"),
        incarnation=1,
        data_dir=tmp_path,
        config={"app": f"{__name__}:Acknowledging", "instance_id": runtime.instance_id},
        bus=_RuntimeBus(runtime),  # type: ignore[arg-type]
    )
    host = _host.MiniAppHost(ctx)
    await nursery.start(host.run)
    return host


@pytest.mark.parametrize("code", [ErrorCode.DEADLINE_EXCEEDED, ErrorCode.ACTOR_RESTARTED])
async def test_a_delivery_whose_acknowledgement_failed_is_offered_again_until_it_is_taken(
    nursery: trio.Nursery,
    autojump_clock: trio.testing.MockClock,
    tmp_path: Path,
    code: ErrorCode,
) -> None:
    # The store or the router was down when the app acknowledged: nothing else would ever hand
    # the delivery to the running app again, and it stayed in its inbox (a drill's breach).
    runtime = testkit.FakeRuntime("probe", "i-1")
    host = await hosted(nursery, runtime, tmp_path)
    first, second = runtime.inbox.put({}, "m1"), runtime.inbox.put({}, "m2")
    runtime.refuse(p.InboxAckManyRequest, code, times=2)

    host.on_delivery_batch(p.DeliveriesEvent(deliveries=(first, second)), None)  # type: ignore[arg-type]
    # The clock is virtual: after the first two pauses, the third offer has been taken.
    await trio.sleep(sum(_host.REOFFER_PAUSES[:2]) + 0.1)

    assert Acknowledging.handed == [["m1", "m2"]] * 3
    assert runtime.inbox.pending == {}
    assert host._offers == {}


async def test_only_what_is_still_in_the_inbox_is_offered_again_and_a_refusal_ends_in_time(
    nursery: trio.Nursery, autojump_clock: trio.testing.MockClock, tmp_path: Path
) -> None:
    runtime = testkit.FakeRuntime("probe", "i-1")
    host = await hosted(nursery, runtime, tmp_path)
    first, second = runtime.inbox.put({}, "m1"), runtime.inbox.put({}, "m2")
    runtime.refuse(p.InboxAckManyRequest, ErrorCode.DEADLINE_EXCEEDED, times=10_000)

    host.on_delivery_batch(p.DeliveriesEvent(deliveries=(first, second)), None)  # type: ignore[arg-type]
    await trio.sleep(0.1)
    runtime.inbox.pending.pop("m1")  # acknowledged meanwhile (a refresh re-read the inbox)
    await trio.sleep(sum(_host.REOFFER_PAUSES) + 1)

    # Offered once at first, then again after each pause, and then left in the inbox for the
    # app's next start: never a busy loop.
    assert Acknowledging.handed == [["m1", "m2"]] + [["m2"]] * len(_host.REOFFER_PAUSES)
    assert host._offers == {}
    assert list(runtime.inbox.pending) == ["m2"]
