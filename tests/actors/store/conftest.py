from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path

import pytest
import trio

from lineup.actors.store._committer import Committer
from lineup.actors.store._db import Database, open_database
from lineup.tests.actors.store._harness import StoreHarness, start_store


@pytest.fixture
async def store(nursery: trio.Nursery, tmp_path: Path) -> StoreHarness:
    return await start_store(nursery, tmp_path / "data")


@pytest.fixture
async def db(tmp_path: Path) -> AsyncIterator[Database]:
    database = open_database(tmp_path, {})
    yield database
    database.close()


@pytest.fixture
async def committer(db: Database, nursery: trio.Nursery) -> Committer:
    """A committer on a real database, without an actor: for running operations directly."""
    committer = Committer()
    await nursery.start(committer.run, db.conn)
    return committer
