"""The bench's quotas section (ops/bench/_quotas.py) runs, and measures both sides."""

from __future__ import annotations

import math

from lineup.ops.bench._quotas import bounds_cost


async def test_the_bounds_cost_is_measured_with_and_without_the_bounds() -> None:
    figures = await bounds_cost(1, 3)
    assert len(figures) == 4
    assert all(math.isfinite(f) and f > 0 for f in figures)
