"""A trio test's own deadline (`support/deadline.py`), in a pytest of its own: a stalled trio
test fails at its timeout, saying where its tasks waited, and the tests after it in the same
process run."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from lineup.tests.support.deadline import BACKSTOP_S

CONFTEST = """
from lineup.tests.conftest import pytest_collection_modifyitems
"""

TESTS = """
import pytest
import trio


async def waits_for_a_reply(never: trio.Event) -> None:
    await never.wait()


@pytest.mark.timeout(1)
async def test_stalls() -> None:
    never = trio.Event()
    async with trio.open_nursery() as nursery:
        nursery.start_soon(waits_for_a_reply, never, name="the reply")
        await never.wait()


async def test_after_it() -> None:
    await trio.sleep(0)


def test_plain_after_it() -> None:
    pass
"""


def test_a_stalled_trio_test_fails_at_its_timeout_with_where_it_waited_and_the_rest_run(
    tmp_path: Path,
) -> None:
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_stall.py").write_text(TESTS)
    options = ["-o", "trio_mode=true", "-o", "timeout=60", "-o", "timeout_method=thread"]
    ran = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *options, str(tmp_path)],
        check=False,
        capture_output=True,
        text=True,
        timeout=60 + BACKSTOP_S,
        cwd=tmp_path,
    )
    out = ran.stdout
    assert ran.returncode == 1, out
    assert "1 failed, 2 passed" in out, out
    assert "StalledTest: still running after its timeout of 1 s" in out, out
    # Both waiting tasks, each at the line where it waits; no library's frames, nor ours.
    lines = TESTS.splitlines()
    reply, test = (n + 1 for n, line in enumerate(lines) if line.strip() == "await never.wait()")
    shown = [line.strip() for line in out.replace(f"{tmp_path}/", "").split("\n")]
    start = next(n for n, line in enumerate(shown) if line.endswith("where its tasks waited:"))
    end = next(n for n in range(start, len(shown)) if shown[n].startswith("All traceback"))
    dump = shown[start + 1 : end]  # then pytest says it hid the deadline's own frames
    assert dump == [
        "<test 'test_stalls'>:",
        f"test_stall.py:{test} test_stalls",
        "the reply:",
        f"test_stall.py:{reply} waits_for_a_reply",
    ], out
    assert "Timeout" not in out  # pytest-timeout's backstop never fired
