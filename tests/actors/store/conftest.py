from __future__ import annotations

from pathlib import Path

import pytest
import trio

from lineup.tests.actors.store._harness import StoreHarness, start_store


@pytest.fixture
async def store(nursery: trio.Nursery, tmp_path: Path) -> StoreHarness:
    return await start_store(nursery, tmp_path / "data")
