"""The SDK hands an app the deliveries queued together in one `on_deliveries`, in order, and
never moves another event across them (`sdk/_app.py`)."""

from __future__ import annotations

import trio

from lineup.actors.kernel import Message
from lineup.sdk import _app
from lineup.sdk import protocol as p


def delivery(n: int) -> p.DeliveryEvent:
    return p.DeliveryEvent(delivery=p.Delivery(delivery_id=f"d{n}", seq=n, envelope={}))


def host_with(*events: Message) -> _app.MiniAppHost:
    # Only the event queue is used here: no process, no bus.
    host = _app.MiniAppHost.__new__(_app.MiniAppHost)
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
    host = host_with(*(delivery(n) for n in range(1, _app.DELIVERY_BURST + 5)))

    deliveries, held = host._waiting_deliveries(delivery(0))

    assert len(deliveries) == _app.DELIVERY_BURST
    assert held is None
    assert host._events_out.receive_nowait() == delivery(_app.DELIVERY_BURST)


def test_only_an_app_that_overrides_on_deliveries_gets_bursts() -> None:
    class Plain(_app.MiniApp):
        pass

    class Bursty(_app.MiniApp):
        async def on_deliveries(self, deliveries: tuple[p.Delivery, ...]) -> None:
            pass

    assert (_app._takes_bursts(Plain()), _app._takes_bursts(Bursty())) == (False, True)
