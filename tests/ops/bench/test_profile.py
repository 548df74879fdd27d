"""`make bench --profile`: one `direct` call's time, per process and per bucket."""

from __future__ import annotations

import pytest

from lineup.ops.bench._profile import (
    OTHER,
    PROCESSES,
    bucket_of,
    profile_direct_call,
    render_profile,
)


@pytest.mark.parametrize(
    ("key", "bucket"),
    [
        (("~", 0, "<method 'poll' of 'select.epoll' objects>"), "wait (epoll: idle)"),
        (("~", 0, "<method 'send' of '_socket.socket' objects>"), "socket syscalls"),
        (
            ("~", 0, "<built-in method pydantic_core._pydantic_core.from_json>"),
            "frames: JSON decode/encode",
        ),
        (("/x/lineup/actors/kernel/acl.py", 1, "refusal"), "ACL, refusals, identity"),
        (("~", 0, "<method 'execute' of 'apsw.Connection' objects>"), "SQLite (apsw calls)"),
        (("/x/lineup/actors/router/_tools.py", 1, "step"), "router logic"),
        (("/x/lineup/actors/kernel/bus.py", 1, "_accept"), "bus, channel, replies (kernel)"),
        (("/x/site-packages/trio/_core/_run.py", 1, "reschedule"), "trio scheduler"),
        (("~", 0, "<built-in method builtins.len>"), OTHER),
    ],
)
def test_each_function_falls_in_one_bucket(key: tuple[str, int, str], bucket: str) -> None:
    assert bucket_of(key) == bucket


@pytest.mark.slow
async def test_the_profile_splits_every_process_cpu_of_one_call() -> None:
    profile = await profile_direct_call(calls=20, in_flight=4)
    assert [p.name for p in profile.processes] == list(PROCESSES)
    for process in profile.processes:
        if process.name == "focus":
            # Off the call's path: the router finds the instance in focus's index (issue 32).
            assert process.sends == 0
            continue
        assert process.cpu_us > 0
        assert sum(process.buckets.values()) == pytest.approx(1.0)
        assert process.top
    app = profile.processes[PROCESSES.index("miniapp:bench")]
    assert app.sends >= 1.0  # the app answers each call: every sandboxed child was profiled
    table = render_profile(profile)
    assert "router logic" in table
    assert "CPU, one at a time" in table
