from __future__ import annotations

from collections.abc import Iterator

import pytest
import trio
from hypothesis import settings

from lineup.tests.support import atomic_parse, deadline
from lineup.tests.support.runtime import stop_shared_zygote

atomic_parse.install()  # before any test can fail: pytest parses a failing test to report it

# No per-example deadline: a wall-clock bound on one example measures the machine's load
# (the suite runs 3–4 workers on 2 cores), not the code. Speed is measured in `make bench`.
settings.register_profile("lineup", deadline=None)
settings.load_profile("lineup")


@pytest.fixture
def data_dir(tmp_path_factory: pytest.TempPathFactory) -> object:
    # Short paths: a Unix socket path must fit in 108 bytes.
    path = tmp_path_factory.mktemp("lu")
    path.chmod(0o700)
    return path


@pytest.fixture(scope="session", autouse=True)
def _shared_zygote() -> Iterator[None]:
    """The runtime trees' zygotes this test process shares (`support.runtime`), stopped last."""
    yield
    trio.run(stop_shared_zygote)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """The tests that declare a longer timeout than the suite's start first, the longest first:
    a minute-long test started last would finish the run alone on one worker. A trio test gets
    a deadline of its own at its timeout (`support.deadline`)."""
    items.sort(key=deadline.declared_timeout, reverse=True)  # stable: the rest keep their order
    deadline.arm(items)
