"""The bench's interactions section (ops/bench/_interactions.py) runs through the real tree."""

from __future__ import annotations

import math

import pytest

from lineup.ops.bench._interactions import answer_latencies


@pytest.mark.timeout(120)
async def test_each_answer_is_timed_from_the_shell_frame_to_the_result_committed() -> None:
    latencies = await answer_latencies(3)
    assert len(latencies) == 3
    assert all(math.isfinite(s) and 0 < s < 30 for s in latencies)
