from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from lineup.actors.store._committer import Committer
from lineup.actors.store._db import Connection, Database, open_database
from lineup.tests.actors.store._harness import StoreHarness, memory_database, start_store


@pytest.fixture
async def store(nursery: trio.Nursery, tmp_path: Path) -> StoreHarness:
    return await start_store(nursery, tmp_path / "data")


@pytest.fixture
def db(tmp_path: Path) -> Iterator[Database]:
    """A real database file in `tmp_path`, migrated. Synchronous, so that sync tests use it too;
    it is closed after the test's trio run, when no committer can still be using it."""
    database = open_database(tmp_path, {})
    yield database
    database.close()


@pytest.fixture
def conn() -> Iterator[Connection]:
    """A migrated in-memory database, each request run in a savepoint as the committer does."""
    connection = memory_database()
    yield connection
    connection.close()


@pytest.fixture
async def committer(db: Database, nursery: trio.Nursery) -> Committer:
    """A committer on a real database, without an actor: for running operations directly."""
    committer = Committer()
    await nursery.start(committer.run, db.conn)
    return committer
