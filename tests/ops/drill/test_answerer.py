"""The drill's scripted user answers each interaction as its plan says, through a fake Shell
socket and trio's mock clock: who acts, when, and that it stops once the card is no longer
open (and tries again while it is)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import trio
import trio.testing

from lineup.ops.drill._asking import EXPIRY_MS, Answerer, Plan, Script


@dataclass
class FakeShell:
    interactions: dict[str, dict[str, Any]] = field(default_factory=dict)
    sent: list[tuple[float, dict[str, Any]]] = field(default_factory=list)
    drop: dict[str, int] = field(default_factory=dict)  # answers lost (a killed hostbridge)
    _changed: trio.Event = field(default_factory=trio.Event)

    async def changed(self) -> None:
        await self._changed.wait()

    def show(self, view: dict[str, Any]) -> None:
        self.interactions[view["interaction_id"]] = view
        self._changed.set()
        self._changed = trio.Event()

    async def send(self, frame: dict[str, Any]) -> bool:
        self.sent.append((trio.current_time(), frame))
        if self.drop.get(frame["interaction_id"]):
            self.drop[frame["interaction_id"]] -= 1
            return True
        view = self.interactions[frame["interaction_id"]]
        if view["state"] in ("pending", "presented"):
            cancelled = frame["answer"].get("cancelled")
            self.show({**view, "state": "cancelled" if cancelled else "submitted"})
        return True


def _view(n: int, kind: str = "confirm") -> dict[str, Any]:
    request = {"title": "t", "prompt": "p"}
    return {
        "interaction_id": f"i{n}",
        "call_id": f"c{n}",
        "kind": kind,
        "state": "presented",
        "request": request,
    }


async def _run(shell: FakeShell, plans: dict[str, Plan], until: float) -> None:
    async with trio.open_nursery() as nursery:
        nursery.start_soon(Answerer(shell, plans, seed=1).run)
        await trio.testing.wait_all_tasks_blocked()
        for n in range(len(plans) + 1):  # one interaction the drill did not ask
            shell.show(_view(n))
        await trio.sleep_until(until)
        nursery.cancel_scope.cancel()


def _plan(n: int, script: Script, asked_at: float = 0.0) -> Plan:
    return Plan(f"c{n}", "confirm", script, asked_at)


async def test_each_plan_is_acted_on_by_whom_it_says_and_nobody_else(
    mock_clock: trio.testing.MockClock,
) -> None:
    mock_clock.autojump_threshold = 0
    scripts: list[Script] = ["answer", "double", "dismiss", "expire", "expire_race", "race"]
    start = trio.current_time()
    plans = {f"c{n}": _plan(n, s, start) for n, s in enumerate(scripts)}
    shell = FakeShell()
    await _run(shell, plans, start + 120)
    by_id: dict[str, list[tuple[float, dict[str, Any]]]] = {}
    for at, frame in shell.sent:
        by_id.setdefault(frame["interaction_id"], []).append((at, frame))
    assert len(by_id["i0"]) == 1  # answered once
    assert len(by_id["i1"]) == 2  # two answers back to back: a double click
    assert "i2" not in by_id and "i3" not in by_id  # the Agent's, and the clock's
    ((at, _),) = by_id["i4"]
    assert abs(at - (start + EXPIRY_MS / 1000)) <= 0.3  # right at the deadline
    assert len(by_id["i5"]) == 1
    assert len(by_id["i6"]) == 1  # one the drill did not ask is answered at once
    assert shell.interactions["i0"]["state"] == "submitted"


async def test_an_answer_lost_on_the_way_is_sent_again_until_the_card_moves_on(
    mock_clock: trio.testing.MockClock,
) -> None:
    mock_clock.autojump_threshold = 0
    shell = FakeShell(drop={"i0": 2})
    start = trio.current_time()
    await _run(shell, {"c0": _plan(0, "cancel", start)}, start + 30)
    answers = [f["answer"] for _, f in shell.sent if f["interaction_id"] == "i0"]
    assert answers == [{"cancelled": True}] * 3
    assert shell.interactions["i0"]["state"] == "cancelled"
