"""Reply slots and their deadlines (actors/kernel/_replies.py), on trio's mock clock."""

from __future__ import annotations

import trio
import trio.testing

from lineup.actors.kernel import DeadlineExceeded, ErrorCode
from lineup.actors.kernel._replies import Deadlines, ReplySlot


async def wait_expired(slot: ReplySlot) -> float:
    await slot.wait()
    assert isinstance(slot.error, DeadlineExceeded)
    assert slot.error.code is ErrorCode.DEADLINE_EXCEEDED
    return trio.current_time()


async def test_every_slot_expires_at_its_own_deadline_whatever_order_they_came_in(
    nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    deadlines = Deadlines()
    nursery.start_soon(deadlines.run)
    start = trio.current_time()
    # In order (the common case), then one shorter than those before it, then in order again.
    offsets = [100.0, 200.0, 10.0, 300.0, 50.0]
    slots = [ReplySlot(start + offset) for offset in offsets]
    expired_at: dict[float, float] = {}

    async def watch(offset: float, slot: ReplySlot) -> None:
        expired_at[offset] = await wait_expired(slot) - start

    with trio.fail_after(1000):
        async with trio.open_nursery() as watchers:
            for offset, slot in zip(offsets, slots, strict=True):
                deadlines.add(slot)
                watchers.start_soon(watch, offset, slot)
    assert expired_at == {offset: offset for offset in offsets}


async def test_a_slot_resolved_in_time_is_never_expired(
    nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    deadlines = Deadlines()
    nursery.start_soon(deadlines.run)
    answered, late = ReplySlot(trio.current_time() + 5), ReplySlot(trio.current_time() + 5)
    deadlines.add(answered)
    deadlines.add(late)
    answered.resolve()
    with trio.fail_after(100):
        await wait_expired(late)
    assert answered.error is None


async def test_finished_requests_are_not_kept_until_their_deadline(
    nursery: trio.Nursery, autojump_clock: trio.testing.MockClock
) -> None:
    deadlines = Deadlines()
    nursery.start_soon(deadlines.run)
    await trio.testing.wait_all_tasks_blocked()
    for i in range(5000):  # one request after another, each answered long before its deadline
        slot = ReplySlot(trio.current_time() + 10)
        deadlines.add(slot)
        if i == 0:
            await trio.testing.wait_all_tasks_blocked()  # the timer is set for the first
        else:
            assert not deadlines._wakeup.is_set()  # nor woken again for any later one
        slot.resolve()
        slot.abandon()
    assert len(deadlines) <= 2
