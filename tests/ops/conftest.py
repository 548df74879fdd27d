from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import httpx
import pytest
import trio

from lineup.tests.ops._devserver import Api, RunningServer, start_devserver


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "devserver.db"


@pytest.fixture
async def server(nursery: trio.Nursery, db_path: Path) -> RunningServer:
    return await start_devserver(nursery, db_path)


@pytest.fixture
async def api(server: RunningServer) -> AsyncIterator[Api]:
    async with httpx.AsyncClient(base_url=server.url) as http:
        yield Api(http)
