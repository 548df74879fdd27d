"""The drill's MCP app invariant catches a call answered twice or never, a wrong number and an
error without a stable code; and the injector finds an MCP app's server as its app's child."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from typing import Any

from lineup.ops.drill._faults import _child_of
from lineup.ops.drill._mcp_apps import check_mcp_app_calls


def result(call_id: str, n: int) -> dict[str, Any]:
    return {"type": "lineup.v1.tool.result", "payload": {"call_id": call_id, "result": {"n": n}}}


def error(call_id: str, code: str | None) -> dict[str, Any]:
    return {"type": "lineup.v1.tool.error", "payload": {"call_id": call_id, "code": code}}


def test_each_call_answered_once_with_its_number_or_a_code_passes() -> None:
    ends = {"a": [result("a", 1)], "b": [error("b", "mcp_server_exited")]}
    (rule,) = check_mcp_app_calls({"a": 1, "b": 2}, ends)
    assert rule.passed, rule.examples


def test_a_lost_a_doubled_a_wrong_and_a_codeless_answer_are_caught() -> None:
    asked = {"lost": 1, "twice": 2, "wrong": 3, "bare": 4}
    ends = {
        "twice": [result("twice", 2), result("twice", 2)],
        "wrong": [result("wrong", 5)],
        "bare": [error("bare", None)],
    }
    (rule,) = check_mcp_app_calls(asked, ends)
    assert rule.examples == [
        "bare: an error without a code",
        "lost: 0 terminal messages",
        "twice: 2 terminal messages",
        "wrong: answered 5, asked 3",
    ]


def test_the_injector_finds_a_processs_child_and_none_for_a_childless_one() -> None:
    started = "import subprocess; p = subprocess.Popen(['sleep', '30']); print(p.pid, flush=True)"
    parent = subprocess.Popen(
        [sys.executable, "-c", f"{started}; p.wait()"], stdout=subprocess.PIPE, text=True
    )
    assert parent.stdout is not None
    child = int(parent.stdout.readline())  # once the parent has started it
    try:
        # The pid the parent itself says it started (its command line may still read empty:
        # the parent is woken from vfork before `execve` has laid out the new argv).
        assert _child_of(parent.pid) == child
        assert _child_of(child) is None
    finally:
        os.kill(child, signal.SIGKILL)
        parent.wait()
        parent.stdout.close()
