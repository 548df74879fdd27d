"""The two harnesses the behaviour suite runs on: the testkit's fake (a fresh one per test) and
a real runtime (one per module, `tests/support/sdk_harness.py` says how)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from lineup.tests.support.sdk_harness import FakeHarness, Harness, RealHarness, RealRuntime


@pytest.fixture(scope="module")
def real_runtime(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RealRuntime]:
    path = tmp_path_factory.mktemp("lu")  # short: a Unix socket path must fit in 108 bytes
    path.chmod(0o700)
    runtime = RealRuntime(path)
    runtime.start()
    yield runtime
    runtime.stop()


@pytest.fixture(params=["fake", "real"])
def harness(request: pytest.FixtureRequest) -> Harness:
    if request.param == "fake":
        return FakeHarness()
    return RealHarness(request.getfixturevalue("real_runtime"))
