"""`lineup agent` as a real process (python -m lineup.ops.agent.console) against a devserver."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import trio

from lineup.ops.agent import AgentClient
from lineup.ops.agent._terminal import Terminal
from lineup.ops.agent.console import Console, Inbox, Session, _command
from lineup.tests.ops._devserver import WAIT, Api, RunningServer, envelope

PROCESS_WAIT = 30.0  # a child interpreter's start-up plus the script


async def _console(
    server: RunningServer, *args: str, stdin: bytes = b""
) -> subprocess.CompletedProcess[bytes]:
    command = [sys.executable, "-m", "lineup.ops.agent.console", "--appserver", server.url]
    command += ["--agent-id", "agent-1", "--agent-secret", "secret-1", *args]
    with trio.fail_after(PROCESS_WAIT):
        return await trio.run_process(
            command,
            stdin=stdin,
            capture_stdout=True,
            capture_stderr=True,
            check=False,
            env=dict(os.environ, PYTHONUNBUFFERED="1"),
        )


def _script(tmp_path: Path, *steps: dict[str, Any]) -> str:
    path = tmp_path / "script.jsonl"
    path.write_text("# a comment, then a blank line\n\n" + "\n".join(json.dumps(s) for s in steps))
    return str(path)


async def _user_stream(api: Api, token: str, count: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    cursor = ""
    with trio.fail_after(PROCESS_WAIT):
        while len(messages) < count:
            answer = (await api.sync("/v1/sync", token, cursor=cursor, timeout_ms=2_000)).json()
            messages += answer["messages"]
            cursor = answer["cursor"]
    return messages


async def test_a_script_says_waits_for_the_client_calls_and_dismisses(
    server: RunningServer, api: Api, tmp_path: Path
) -> None:
    script = _script(
        tmp_path,
        {"say": "hello from the script"},
        {"wait": {"type": "lineup.v1.text", "timeout": 20}},
        {"expect_text": "ping"},
        {"wait": {"type": "lineup.v1.client.inventory"}},
        {"call": {"tool": "interaction.notice", "input": {"text": "hi"}, "call_id": "call-1"}},
        {"dismiss": {"control_id": "ctl-1", "call_id": "call-1"}},
        {
            "call": {
                "tool": "interaction.confirm",
                "input": {},
                "call_id": "call-2",
                "app_session_context": "lu:app_session:i-1",
            }
        },
    )
    alice = await api.user_token("alice")
    results: list[subprocess.CompletedProcess[bytes]] = []

    async def run_console() -> None:
        results.append(
            await _console(server, "--conversation-id", "conv-a", "--script", script, "--json")
        )

    async with trio.open_nursery() as nursery:
        nursery.start_soon(run_console)
        [greeting] = await _user_stream(api, alice, 1)
        assert greeting["payload"] == {"markdown": "hello from the script"}
        await api.post(
            "/v1/messages", alice, envelope("conv-a", id="u-1", payload={"markdown": "a ping"}), "1"
        )
        inventory = {"revision": 4, "tools": []}
        await api.post(
            "/v1/messages",
            alice,
            envelope("conv-a", id="inv-4", type="lineup.v1.client.inventory", payload=inventory),
            "2",
        )
        # The client answers each call with its receipt: a script ends once its calls are.
        await _user_stream(api, alice, 4)
        for n in (1, 2):
            receipt = {"call_id": f"call-{n}", "status": "accepted"}
            kind = "lineup.v1.tool.receipt"
            body = envelope("conv-a", id=f"r-{n}", type=kind, payload=receipt)
            await api.post("/v1/messages", alice, body, f"r{n}")

    [result] = results
    assert result.returncode == 0, result.stderr
    printed = [json.loads(line) for line in result.stdout.decode().splitlines()]
    assert [m["id"] for m in printed] == ["u-1", "inv-4", "r-1", "r-2"]
    _, call, dismiss, in_session = await _user_stream(api, alice, 4)
    assert call["type"] == "lineup.v1.tool.call"
    assert call["payload"] == {
        "call_id": "call-1",
        "tool": "interaction.notice",
        "inventory_revision": "4",  # the last inventory the client sent
        "input": {"text": "hi"},
    }
    assert call["sender"] == {"kind": "agent", "id": "agent-1"}
    assert dismiss["type"] == "lineup.v1.interaction.dismiss"
    assert dismiss["payload"] == {"control_id": "ctl-1", "call_id": "call-1"}
    assert in_session["payload"]["app_session_context"] == {"app_session_id": "lu:app_session:i-1"}


async def test_a_wait_that_times_out_exits_1(server: RunningServer, tmp_path: Path) -> None:
    script = _script(tmp_path, {"wait": {"type": "lineup.v1.text", "timeout": 0.2}})
    result = await _console(server, "--script", script)
    assert result.returncode == 1
    assert result.stderr.decode().splitlines()[-1].startswith("lineup agent: script line 3:")


async def test_a_failed_expectation_exits_1_naming_the_step(
    server: RunningServer, api: Api, tmp_path: Path
) -> None:
    alice = await api.user_token("alice")
    script = _script(tmp_path, {"say": "ready"}, {"wait": {"type": "text"}}, {"expect_text": "yes"})
    results: list[subprocess.CompletedProcess[bytes]] = []

    async def run_console() -> None:
        results.append(await _console(server, "--conversation-id", "conv-a", "--script", script))

    async with trio.open_nursery() as nursery:
        nursery.start_soon(run_console)
        await _user_stream(api, alice, 1)  # the script is under way
        body = envelope("conv-a", id="u-no", payload={"markdown": "nope"})
        await api.post("/v1/messages", alice, body, "1")
    [result] = results
    assert result.returncode == 1
    last = result.stderr.decode().splitlines()[-1]
    assert last.startswith('lineup agent: script line 5: {"expect_text": "yes"}: ')
    assert "text  u-no" not in last  # the failure names the step, the message line is stdout
    assert 'text               "nope"' in result.stdout.decode()


async def test_a_wait_never_matches_what_was_there_before_the_script(
    server: RunningServer, api: Api, tmp_path: Path
) -> None:
    alice = await api.user_token("alice")
    await api.post("/v1/messages", alice, envelope("conv-a", payload={"markdown": "old"}), "1")
    script = _script(tmp_path, {"wait": {"type": "text", "timeout": 0.5}})
    result = await _console(server, "--conversation-id", "conv-a", "--script", script)
    assert result.returncode == 1
    assert "timed out after 0.5 s waiting for text" in result.stderr.decode()
    assert "1 earlier message (show lists them)" in result.stderr.decode()
    assert result.stdout == b""  # history is counted, not shown


@pytest.mark.parametrize(
    "step", [{"shout": "x"}, {"say": 3}, {"call": {"input": {}}}, {"wait": {}}, "not a step"]
)
async def test_a_malformed_step_exits_1(server: RunningServer, tmp_path: Path, step: Any) -> None:
    result = await _console(server, "--script", _script(tmp_path, step))
    assert result.returncode == 1


async def test_a_wrong_secret_exits_1(server: RunningServer, tmp_path: Path) -> None:
    command = [sys.executable, "-m", "lineup.ops.agent.console", "--appserver", server.url]
    command += ["--agent-secret", "wrong", "--script", _script(tmp_path, {"say": "x"})]
    with trio.fail_after(PROCESS_WAIT):
        result = await trio.run_process(
            command, capture_stdout=True, capture_stderr=True, check=False
        )
    assert result.returncode == 1


async def test_interactive_commands_send_as_the_agent_until_quit(
    server: RunningServer, api: Api
) -> None:
    commands = b'say first\\nline\ncall notes.add {"title": "a b"} 7\ndismiss ctl-9 call-9\nquit\n'
    result = await _console(server, "--conversation-id", "conv-b", stdin=commands)
    assert result.returncode == 0, result.stderr
    bob = await api.user_token("bob")
    text, call, dismiss = await _user_stream(api, bob, 3)
    assert text["payload"] == {"markdown": "first\nline"}
    assert call["payload"]["tool"] == "notes.add"
    assert call["payload"]["input"] == {"title": "a b"}
    assert call["payload"]["inventory_revision"] == "7"
    assert dismiss["payload"] == {"control_id": "ctl-9", "call_id": "call-9"}


async def test_say_may_name_the_app_sub_session_its_text_is_a_short_result_of(
    server: RunningServer, api: Api
) -> None:
    commands = b"say --app-session lu:app_session:task-dashboard:t-1 at **60 %**\nquit\n"
    result = await _console(server, "--conversation-id", "conv-b", stdin=commands)
    assert result.returncode == 0, result.stderr
    (text,) = await _user_stream(api, await api.user_token("bob"), 1)
    assert text["payload"] == {
        "markdown": "at **60 %**",
        "app_session_context": {"app_session_id": "lu:app_session:task-dashboard:t-1"},
    }


@pytest.mark.parametrize("as_json", [False, True])
async def test_show_prints_what_the_client_sent_so_far(
    server: RunningServer, capsys: pytest.CaptureFixture[str], as_json: bool
) -> None:
    inbox = Inbox()
    inbox.add({"id": "u-1", "type": "lineup.v1.text", "payload": {"markdown": "hi"}})
    inbox.add({"id": "u-2", "type": "lineup.v1.client.inventory", "payload": {"revision": 2}})
    async with AgentClient(server.url) as client:
        session = Session(client, "conv-a", inbox, WAIT, Console(Terminal(), as_json=as_json))
        assert await _command(session, "show")
        assert await _command(session, "show 1")
        assert not await _command(session, "quit")
    lines = capsys.readouterr().out.splitlines()
    if as_json:
        assert [json.loads(line)["id"] for line in lines] == ["u-1", "u-2", "u-2"]
    else:
        assert lines == ['text               "hi"', *2 * ["client.inventory   revision 2, 0 tools"]]
    assert inbox.latest_revision() == 2
