"""The capabilities exercise waits out the gateway's hush from the last Deny it saw
(`ops/drill/_capabilities.py`), the scheduling alone: `_ask` and the Shell are stand-ins, the
clock is trio's autojump one."""

from __future__ import annotations

import itertools
from types import SimpleNamespace
from typing import Any

import pytest
import trio
import trio.testing

from lineup.ops.drill import _capabilities
from lineup.ops.drill._capabilities import CapabilitiesExercise
from lineup.ops.drill._prompts import Plan, Script
from lineup.sdk.capabilities import PROMPT_QUIET_S


class _Idle:
    def __init__(self, *args: Any) -> None:
        pass

    async def run(self) -> None:
        await trio.sleep_forever()


async def _known() -> None:
    return None


@pytest.mark.parametrize("hushed_takes", [0.0, 10.0])
async def test_the_next_request_waits_a_whole_hush_after_the_hushed_one_ended(
    monkeypatch: pytest.MonkeyPatch, autojump_clock: trio.testing.MockClock, hushed_takes: float
) -> None:
    # 10 s: a hushed request asked after all (a restarted gateway forgot the hush, and the
    # user denied it: a new hush from its end), as drill seed 251028 had it.
    monkeypatch.setattr(_capabilities, "PromptUser", _Idle)
    monkeypatch.setattr(_capabilities, "Calls", _Idle)
    exercise = CapabilitiesExercise(seed=1)
    asked: list[tuple[Script, float, float]] = []  # script, start, end

    async def ask(script: Script, end: float) -> Plan:
        start = trio.current_time()
        await trio.sleep(hushed_takes if script == "hushed" else 1.0)
        asked.append((script, start, trio.current_time()))
        return Plan(f"r{len(asked)}", script, "app", start, over=True)

    monkeypatch.setattr(exercise, "_ask", ask)
    stage = SimpleNamespace(user=None, agent=SimpleNamespace(inventory_known=_known), client=None)
    await exercise.drive(stage, 200.0)  # type: ignore[arg-type]

    scripts = [script for script, _, _ in asked]
    assert scripts[:4] == ["deny", "hushed", "cancel", "hushed"]
    for (before, _, ended), (after, started, _) in itertools.pairwise(asked):
        if before == "hushed":  # the hush of a Deny or dismissal the gateway saw last
            assert started - ended >= PROMPT_QUIET_S, (before, after)
