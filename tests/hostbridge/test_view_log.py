"""`hostbridge/_view_log.py`: a Surface's log line goes to the supervisor for its app's own
log, bounded per instance, and a refusal is audited by its code and instance, never the text."""

from __future__ import annotations

from typing import Any, cast

import trio
import trio.testing

from lineup.actors.kernel import AuditRecord, Bus, ErrorCode, Message
from lineup.actors.kernel.control import AppViewLogEvent
from lineup.hostbridge._surface_book import SurfaceBook
from lineup.hostbridge._view_log import LINES_BURST, LINES_PER_S, VIEW_LOG_REFUSED, ViewLogRelay
from lineup.hostbridge.shell_protocol import SurfaceLogFrame

SECRET = "the view's own words"


class TellingBus:
    """What the relay uses of the bus: `tell` (kept, or refused with `refuse`) and the audit."""

    def __init__(self) -> None:
        self.told: list[tuple[str, Message]] = []
        self.refusals: list[AuditRecord] = []
        self.refuse: ErrorCode | None = None

    async def tell(self, peer: str, body: Message, **kwargs: Any) -> ErrorCode | None:
        if self.refuse is None:
            self.told.append((peer, body))
        return self.refuse

    def audit_refusal(self, record: AuditRecord) -> bool:
        self.refusals.append(record)
        return True


def relay_with_surface() -> tuple[ViewLogRelay, TellingBus]:
    bus = TellingBus()
    book = SurfaceBook()
    book.view("gettime:c1", {"kind": "lineup.surface", "surface_id": "s1"}, "gettime")
    return ViewLogRelay(cast(Bus, bus), book), bus


def line(instance_id: str = "gettime:c1", level: Any = "info") -> SurfaceLogFrame:
    return SurfaceLogFrame(instance_id=instance_id, level=level, text=SECRET)


async def test_a_surfaces_log_line_is_told_to_the_supervisor_for_its_apps_log() -> None:
    relay, bus = relay_with_surface()
    assert await relay.relay(line(level="warning")) is None
    assert bus.told == [
        ("supervisor", AppViewLogEvent(app_scope="gettime", level="warning", text=SECRET))
    ]
    assert bus.refusals == []  # a line is never audited


async def test_a_line_of_an_instance_without_a_surface_is_refused_and_audited_without_text() -> (
    None
):
    relay, bus = relay_with_surface()
    assert await relay.relay(line("chat:c9")) is ErrorCode.SURFACE_NOT_FOUND
    assert bus.told == []
    [row] = bus.refusals
    assert (row.event, row.code, row.subject_id) == (
        VIEW_LOG_REFUSED,
        "surface_not_found",
        "chat:c9",
    )
    assert SECRET not in row.model_dump_json()


async def test_lines_past_the_burst_are_refused_until_the_rate_allows_again(
    autojump_clock: trio.testing.MockClock,
) -> None:
    relay, bus = relay_with_surface()
    for _ in range(LINES_BURST):
        assert await relay.relay(line()) is None
    assert await relay.relay(line()) is ErrorCode.RATE_LIMITED
    assert [r.code for r in bus.refusals] == ["rate_limited"]
    await trio.sleep(1 / LINES_PER_S)  # the mock clock: one line's worth of time
    assert await relay.relay(line()) is None
    assert len(bus.told) == LINES_BURST + 1


async def test_a_line_the_supervisor_cannot_be_told_is_audited_with_that_code() -> None:
    relay, bus = relay_with_surface()
    bus.refuse = ErrorCode.DEADLINE_EXCEEDED
    assert await relay.relay(line()) is ErrorCode.DEADLINE_EXCEEDED
    assert [r.code for r in bus.refusals] == ["deadline_exceeded"]
