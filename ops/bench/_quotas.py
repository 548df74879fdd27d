"""The cost of the quotas and bounds on the hot path: the same work with and without them.

A MiniApp's bus and the router's and focus's buses, in one process, joined by real socket
pairs: one tool call is what the SDK sends for it (take, one progress report, complete), one view
update is a `focus.sdk.view.update` of a ~2 KiB view. With the bounds, the router's and
focus's channels from the app run the MiniApp rate bucket on every frame, the router passes each
progress report through the coalescer (`_progress`), and focus checks the view as it does
(`ViewBook.check_view`: keys, document limits, bytes, trust); without them, the same frames get
the same answers unchecked. Rounds of each are interleaved, and the figure is the median time
per operation: the ratio is the cost.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Final

import trio

from lineup.actors.focus._views import ViewBook
from lineup.actors.kernel import (
    ActorKind,
    Bus,
    Channel,
    Envelope,
    ErrorCode,
    Identity,
    LineUpError,
    Message,
    channel_pair,
)
from lineup.actors.kernel._connection import MINIAPP_BURST
from lineup.actors.router._progress import ProgressCoalescer
from lineup.sdk import protocol as sdk

__all__ = ["bounds_cost"]

APP: Final = Identity(ActorKind.MINIAPP, "miniapp:bench")
ROUTER: Final = Identity(ActorKind.ROUTER, "router")
FOCUS: Final = Identity(ActorKind.FOCUS, "focus")
# Frames a round sends from the app: under the rate bucket's burst, so that the bounded rounds
# do the same work (nothing refused), with the bucket refilled before each.
MAX_FRAMES_PER_ROUND: Final = int(MINIAPP_BURST * 0.8)


def _view(n: int) -> dict[str, object]:
    rows = [{"kind": "row", "id": f"r{i}", "text": f"item {i} of round {n}"} for i in range(40)]
    return {"kind": "probe", "title": "Bench", "children": rows}


class _Side:
    """The receiving side's handler: bounded or not, per round."""

    def __init__(self) -> None:
        self.bounded = True
        self.progress: ProgressCoalescer[sdk.ToolProgressRequest] = ProgressCoalescer()
        self.views = ViewBook(trusted=frozenset())  # focus's own checks of a view

    def router(self, env: Envelope) -> Message:
        body = env.body
        if isinstance(body, sdk.ToolProgressRequest) and self.bounded:
            self.progress.offer(body.call_id, body, trio.current_time())
        if isinstance(body, sdk.ToolAcceptRequest | sdk.ToolProgressRequest):
            return sdk.CommandReceipt(id=body.call_id)
        if isinstance(body, sdk.ToolCompleteRequest):
            if self.bounded:
                self.progress.drop(body.call_id)
            return sdk.CommandReceipt(id=body.call_id)
        raise LineUpError(ErrorCode.NO_HANDLER, body.TYPE)

    def focus(self, env: Envelope) -> Message:
        body = env.body
        if isinstance(body, sdk.ViewUpdateRequest):
            if self.bounded:
                self.views.check_view(APP.name.removeprefix("miniapp:"), body.view)
            return sdk.CommandReceipt(id=body.instance_id)
        raise LineUpError(ErrorCode.NO_HANDLER, body.TYPE)


async def bounds_cost(rounds: int, per_round: int) -> tuple[float, float, float, float]:
    """Median µs per (tool call bounded, unbounded, view update bounded, unbounded)."""
    per_round = min(per_round, MAX_FRAMES_PER_ROUND // 3)
    side = _Side()
    async with trio.open_nursery() as nursery:
        app = Bus(APP, lambda env: None)
        router = Bus(ROUTER, side.router)
        focus = Bus(FOCUS, side.focus)
        for bus in (app, router, focus):
            await nursery.start(bus.run)
        conns = []
        for peer in (router, focus):
            ours, theirs = channel_pair()
            app.connect(peer.me, 0, Channel(ours))
            conns.append(peer.connect(APP, 0, Channel(theirs)))

        call_no = 0

        async def tool_calls() -> None:
            nonlocal call_no
            for _ in range(per_round):
                call_no += 1
                call_id = f"c{call_no}"
                await app.request(
                    "router", sdk.ToolAcceptRequest(call_id=call_id), expect=sdk.CommandReceipt
                )
                await app.request(
                    "router",
                    sdk.ToolProgressRequest(call_id=call_id, progress={"done": 1}),
                    expect=sdk.CommandReceipt,
                )
                await app.request(
                    "router",
                    sdk.ToolCompleteRequest(call_id=call_id, result={"text": "x"}),
                    expect=sdk.CommandReceipt,
                )

        async def view_updates() -> None:
            for n in range(per_round):
                await app.request(
                    "focus",
                    sdk.ViewUpdateRequest(instance_id="bench:1", view=_view(n)),
                    expect=sdk.CommandReceipt,
                )

        async def timed(work: Callable[[], Awaitable[None]], bounded: bool) -> float:
            side.bounded = bounded
            for conn in conns:
                conn.rate_limited = bounded
                conn.tokens = MINIAPP_BURST  # a full bucket: nothing is refused in a round
            started = time.perf_counter()
            await work()
            return (time.perf_counter() - started) / per_round * 1e6

        results: dict[tuple[str, bool], list[float]] = {}
        for work in (tool_calls, view_updates):
            await timed(work, True)  # warm up: caches, introductions
            await timed(work, False)
            for r in range(rounds):
                order = (True, False) if r % 2 == 0 else (False, True)  # interleaved, A/B B/A
                for bounded in order:
                    results.setdefault((work.__name__, bounded), []).append(
                        await timed(work, bounded)
                    )
        nursery.cancel_scope.cancel()

    def med(name: str, bounded: bool) -> float:
        return statistics.median(results[(name, bounded)])

    return (
        med("tool_calls", True),
        med("tool_calls", False),
        med("view_updates", True),
        med("view_updates", False),
    )
