from __future__ import annotations

from collections.abc import Iterator

import pytest
import trio

from lineup.tests.support.runtime import stop_shared_zygote


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
