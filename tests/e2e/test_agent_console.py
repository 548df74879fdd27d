"""`lineup agent --data-dir` end to end: the console in its own process finds the embedded
AppServer of a real runtime (no demo Agent) through the data dir, plays a script against it
while the user answers in the Shell's place, and fails on the refused call naming its step
and the field the runtime named."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import trio

from lineup.tests.support.interactions import CONFIRM, scene
from lineup.tests.support.runtime import CONVERSATION

pytestmark = pytest.mark.slow

WAIT = 30.0  # a child interpreter's start-up plus the script
ROOT = str(Path(__file__).resolve().parents[3])  # the folder `lineup` is importable from


def _env() -> dict[str, str]:
    path = os.environ.get("PYTHONPATH", "")
    return {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{path}" if path else ROOT}


async def _agent_console(
    data_dir: Path, script: Path, results: list[subprocess.CompletedProcess[bytes]]
) -> None:
    command = [sys.executable, "-m", "lineup", "agent", "--data-dir", str(data_dir)]
    with trio.fail_after(WAIT):
        results.append(
            await trio.run_process(
                [*command, "--script", str(script)],
                capture_stdout=True,
                capture_stderr=True,
                check=False,
                env=_env(),
            )
        )


async def test_a_script_through_the_data_dir_gets_its_answer_then_fails_on_the_refused_field(
    nursery: trio.Nursery, data_dir: Path, tmp_path: Path
) -> None:
    s = await scene(nursery, data_dir)
    # An earlier call's result is history: no wait of the script may take it.
    await s.agent.client.call_tool(
        CONVERSATION, "interaction.notice", {"title": "t", "message": "m"}, s.revision, "n-0"
    )
    await s.agent.terminal("n-0")
    steps: list[dict[str, Any]] = [
        {"call": {"tool": "interaction.confirm", "input": CONFIRM, "call_id": "c-ok"}},
        {"wait": {"type": "tool.result"}},
        {"expect_text": '"approved": true'},
        {"call": {"tool": "interaction.notice", "input": {"title": "t"}, "call_id": "c-bad"}},
        {"wait": {"type": "tool.result"}},
        {"say": "not reached"},
    ]
    script = tmp_path / "script.jsonl"
    script.write_text("\n".join(json.dumps(step) for step in steps) + "\n")
    results: list[subprocess.CompletedProcess[bytes]] = []
    async with trio.open_nursery() as inner:
        inner.start_soon(_agent_console, s.runtime.supervisor.data_dir, script, results)
        asked = await s.interaction("c-ok", "presented")  # the console is waiting on it
        assert (await s.answer(asked.interaction_id, {"approved": True})).changed

    [result] = results
    stderr, stdout = result.stderr.decode(), result.stdout.decode().splitlines()
    assert result.returncode == 1, stderr
    assert stderr.splitlines()[-1] == (
        'lineup agent: script line 5: {"wait": {"type": "tool.result"}}: '
        "refused tool_input_invalid at /message where tool.result was expected"
    )
    assert 'tool.result        c-ok  ok  {"approved":true}' in stdout
    assert "tool.error         c-bad  refused tool_input_invalid at /message" in stdout
    assert not any("n-0" in line for line in stdout)  # history is not shown
    assert not any("sent text" in line for line in stderr.splitlines())  # it stopped there


async def test_a_data_dir_with_no_runtime_is_one_line_and_exit_1(tmp_path: Path) -> None:
    command = [sys.executable, "-m", "lineup", "agent", "--data-dir", str(tmp_path)]
    with trio.fail_after(WAIT):
        result = await trio.run_process(
            command, capture_stdout=True, capture_stderr=True, check=False, env=_env()
        )
    assert result.returncode == 1
    assert result.stderr.decode() == f"lineup agent: no lineup runs with data dir {tmp_path}\n"
