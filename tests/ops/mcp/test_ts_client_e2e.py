"""`lineup mcp --http` against the ecosystem's own clients, on a real runtime: the TypeScript
SDK's `Client` (`@modelcontextprotocol/sdk`, pinned, from npm: what the MCP Inspector and the
hosts built on it run) driven by `ts_client.mjs`, and the conformance suite's server scenarios
(`@modelcontextprotocol/conformance`, pinned).

The conformance scenarios that apply are `APPLICABLE`. Those that do not, and why:

- `tools-call-simple-text`, `-image`, `-audio`, `-embedded-resource`, `-mixed-content`,
  `-with-logging`, `-with-progress`, `-sampling`, `-elicitation`, `json-schema-2020-12`,
  `elicitation-sep1034-defaults`, `elicitation-sep1330-enums`, `server-sse-polling`: each calls
  a tool of the suite's reference server (`test_simple_text`, `test_reconnection`, …); a
  LineUp runtime's tools are its apps' (the resumption `server-sse-polling` checks is proven
  here instead, with a dropped connection: `test_a_dropped_http_stream_resumes…`).
- `resources-read-text`, `-read-binary`, `resources-templates-read`: they read the reference
  server's `test://` resources; LineUp serves one resource, the conversation.
- `prompts-*`: LineUp offers no prompts; `completion-complete`: nor completions (both
  capabilities are absent, as the spec lets a server).

The suite's bundle imports `fs.globSync`, which Node 22 has and Node 20 lacks: on Node 20,
`conformance_node20.mjs` gives it a stub (no server scenario calls it).
"""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
import subprocess
import sys
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Final

import pytest
import trio

from lineup.supervisor._runtime import free_port
from lineup.tests.e2e.test_mcp import _data_dir, _env, _listening
from lineup.tests.support.interactions import CONFIRM, POLL, Scene, scene
from lineup.tests.support.npm import NpmPackage, installed

pytestmark = pytest.mark.slow

SDK: Final = NpmPackage(
    "@modelcontextprotocol/sdk",
    "1.32.2",
    "sha512-SWsVtH/0vULSQStoZ6xxH2K09Li8fXYTMC64ZeogCdpZ3XSi1eCPOByV1OpuJxuI3OcmHhosDWYyii07tpPsLw==",
)
CONFORMANCE: Final = NpmPackage(
    "@modelcontextprotocol/conformance",
    "0.1.16",
    "sha512-GI7qiN0r39/MH2srVUR3AXaEN0YLCro20lIBbnvc1frBhszenxvUifBuTzxeVQVagILfBzCIcnungUOma8OrgA==",
)
APPLICABLE: Final = (
    "server-initialize",
    "ping",
    "logging-set-level",
    "tools-list",
    "tools-call-error",
    "resources-list",
    "resources-subscribe",
    "resources-unsubscribe",
    "server-sse-multiple-streams",
    "dns-rebinding-protection",
)
HERE: Final = Path(__file__).parent
WAIT: Final = 30.0
CLIENT_TIMEOUT_MS: Final = 1500  # the TypeScript client's request timeout in these tests
RESOURCE_NOT_FOUND: Final = -32002
INVALID_PARAMS: Final = -32602
REQUEST_TIMEOUT: Final = -32001  # the TypeScript SDK's own code for a request timed out


def _node() -> str:
    node = shutil.which("node")
    assert node is not None, "node (20 or later) is needed: apt-get install -y nodejs"
    return node


class TsClient:
    """`ts_client.mjs` in its own process: commands in, JSON lines out, all kept."""

    def __init__(self, process: trio.Process) -> None:
        self.process = process
        self.lines: list[dict[str, Any]] = []
        self._changed = trio.Event()
        self._next_id = 0

    async def read(self) -> None:
        assert self.process.stdout is not None
        buffered = b""
        async for chunk in self.process.stdout:
            buffered += chunk
            *whole, buffered = buffered.split(b"\n")
            for line in whole:
                self.lines.append(json.loads(line))
            self._changed.set()
            self._changed = trio.Event()

    async def wait_for(self, match: Callable[[dict[str, Any]], bool]) -> dict[str, Any]:
        with trio.fail_after(WAIT):
            while True:
                for line in self.lines:
                    if match(line):
                        return line
                await self._changed.wait()

    async def send(self, op: str, **fields: Any) -> int:
        self._next_id += 1
        assert self.process.stdin is not None
        command = {"id": self._next_id, "op": op, **fields}
        await self.process.stdin.send_all(json.dumps(command).encode() + b"\n")
        return self._next_id

    async def ask(self, op: str, **fields: Any) -> dict[str, Any]:
        """Send a command; its answer (`ok`, and `result` or the error's `code`)."""
        sent = await self.send(op, **fields)
        return await self.wait_for(lambda line: line.get("id") == sent and "ok" in line)


async def _bridge(
    data_dir: Path, port: int, log: Path, *, task_status: trio.TaskStatus[trio.Process]
) -> None:
    """`lineup mcp --data-dir D --http PORT`, its stderr (its logs) into `log`."""
    args = [sys.executable, "-m", "lineup", "mcp", "--data-dir", str(data_dir)]
    with log.open("wb") as stderr:
        await trio.run_process(
            [*args, "--http", str(port)],
            env=_env(),
            stderr=stderr,
            check=False,
            task_status=task_status,
        )


@asynccontextmanager
async def bridge_and_client(s: Scene) -> AsyncIterator[tuple[TsClient, Path]]:
    """`lineup mcp --http` on a free port, the TypeScript client connected to it, and the
    file of the bridge's logs."""
    sdk = installed(SDK)
    port = free_port()
    log = _data_dir(s).parent / f"mcp-{port}.log"
    async with trio.open_nursery() as nursery:
        bridge = await nursery.start(_bridge, _data_dir(s), port, log)
        await _listening(port)
        url = f"http://127.0.0.1:{port}/mcp"
        process = await trio.lowlevel.open_process(
            [_node(), str(HERE / "ts_client.mjs"), str(sdk), url],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
        )
        client = TsClient(process)
        nursery.start_soon(client.read)
        try:
            await client.wait_for(lambda line: line.get("ready") is True)
            yield client, log
        finally:
            with trio.CancelScope(shield=True):
                process.kill()
                await process.wait()
                for pipe in (process.stdin, process.stdout):
                    if pipe is not None:
                        await pipe.aclose()
                bridge.terminate()


def _text(result: dict[str, Any]) -> str:
    (text,) = [c["text"] for c in result["content"] if c["type"] == "text"]
    return str(text)


async def test_the_typescript_client_sees_refusal_codes_titles_hints_and_whole_results(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    """Three claims that change nothing another needs, on one tree, bridge and client (each
    a Python interpreter importing the MCP SDK, or a Node one: what such a test costs)."""
    s = await scene(nursery, data_dir)
    async with bridge_and_client(s) as (client, log):
        await _refusals_are_results_with_their_codes(client)
        await _tools_carry_titles_hints_and_a_results_text_is_all_of_it(client)
        await _an_unknown_resource_is_32002(client)
        logged = log.read_text()
    # Nothing logged of the refusals: answered after them, on the same connection, so the
    # bridge's logs of them are written.
    assert "lineup mcp: serving" in logged  # the bridge's stderr, read
    assert "Traceback" not in logged and "raised" not in logged


async def _refusals_are_results_with_their_codes(client: TsClient) -> None:
    """The TypeScript client sees each refusal's code and never throws its own."""
    listed = await client.ask("list")  # the client keeps each tool's outputSchema
    assert listed["ok"]
    for name, arguments, code in (
        ("conversation.say", {}, "tool_input_invalid at /markdown"),
        ("conversation.say", {"markdown": "hi", "to": "all"}, "tool_input_invalid at /to"),
        ("task-dashboard.update", {"task_id": "t1", "bogus": 1}, "tool_input_invalid"),
    ):
        refused = await client.ask("call", name=name, arguments=arguments)
        assert refused["ok"], refused  # not the client's own schema error
        assert refused["result"]["isError"] is True
        assert "structuredContent" not in refused["result"]
        assert _text(refused["result"]).startswith(f"error: {code}")


async def _tools_carry_titles_hints_and_a_results_text_is_all_of_it(client: TsClient) -> None:
    listed = await client.ask("list")
    tools = {t["name"]: t for t in listed["result"]["tools"]}
    for tool in tools.values():
        assert tool["title"]
        hints = tool["annotations"]
        assert {"readOnlyHint", "destructiveHint", "idempotentHint"} <= set(hints)
    assert tools["task-dashboard.open"]["title"] == "Task dashboard: open"
    assert tools["interaction.confirm"]["annotations"]["readOnlyHint"] is True

    # A task whose update answers more than 200 characters (its id and title).
    task_id, title = "t" * 100, "A quarterly report, " * 9
    opened = await client.send(
        "stream", name="task-dashboard.open", arguments={"task_id": task_id, "title": title}
    )
    await client.wait_for(
        lambda line: (
            line.get("id") == opened and task_id in str(line.get("task", {}).get("statusMessage"))
        )
    )
    updated = await client.ask(
        "call", name="task-dashboard.update", arguments={"task_id": task_id, "progress": 40}
    )
    result = updated["result"]
    assert not result.get("isError") and len(_text(result)) > 200
    assert json.loads(_text(result)) == result["structuredContent"]
    assert result["structuredContent"]["title"] == title


async def _an_unknown_resource_is_32002(client: TsClient) -> None:
    unknown = await client.ask("read", uri="lineup://nothing/here")
    assert (unknown["ok"], unknown["code"]) == (False, RESOURCE_NOT_FOUND)
    known = await client.ask("read", uri="lineup://conversation/messages")
    assert known["ok"]


async def test_a_call_waiting_for_the_user_outlives_the_clients_request_timeout_as_a_task(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    """The TypeScript client does not reset its timeout on progress: a plain call that waits
    for the user longer than it fails (-32001); the same call as a task (the SDK's
    `callToolStream`, which polls) gets the user's answer however long it takes."""
    s = await scene(nursery, data_dir)
    async with bridge_and_client(s) as (client, _log):
        await client.ask("list")  # the client learns which tools run as tasks
        asked = await client.send(
            "stream", name="interaction.confirm", arguments=CONFIRM, timeout=CLIENT_TIMEOUT_MS
        )
        # The user takes longer than the client's timeout: seen in the client's own polls.
        await client.wait_for(
            lambda line: (
                line.get("id") == asked
                and line.get("step") == "taskStatus"
                and line["elapsed"] > 2 * CLIENT_TIMEOUT_MS
            )
        )
        shown = await _one_open_interaction(s)
        await s.answer(shown.interaction_id, {"approved": True})
        answered = await client.wait_for(lambda line: line.get("id") == asked and "ok" in line)
        assert answered["ok"], answered
        assert answered["result"]["structuredContent"] == {"approved": True}
        assert answered["elapsed"] > 2 * CLIENT_TIMEOUT_MS

        plain = await client.ask(
            "call", name="interaction.confirm", arguments=CONFIRM, timeout=CLIENT_TIMEOUT_MS
        )
        assert (plain["ok"], plain["code"]) == (False, REQUEST_TIMEOUT)


async def test_a_cancelled_task_dismisses_its_question_and_ends_cancelled_once(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    """Eight seconds quiet, up to fifteen on a loaded machine, by what it proves: the official
    TypeScript client (Node, its own process) through `lineup mcp --http` to a real tree, a
    question shown, and the task cancelled through the client."""
    s = await scene(nursery, data_dir)
    async with bridge_and_client(s) as (client, _log):
        await client.ask("list")
        asked = await client.send("stream", name="interaction.confirm", arguments=CONFIRM)
        created = await client.wait_for(
            lambda line: line.get("id") == asked and line.get("step") == "taskCreated"
        )
        task_id = created["task"]["taskId"]
        shown = await _one_open_interaction(s)
        cancelled = await client.ask("cancel", taskId=task_id)
        assert cancelled["result"]["status"] == "cancelled"
        again = await client.ask("cancel", taskId=task_id)
        assert (again["ok"], again["code"]) == (False, INVALID_PARAMS)  # it has ended
        listed = await client.ask("tasks")
        assert [(t["taskId"], t["status"]) for t in listed["result"]["tasks"]] == [
            (task_id, "cancelled")
        ]
    finals = await s.finals_of(shown.call_id)
    assert [(f["type"], f["payload"]["code"]) for f in finals] == [
        ("lineup.v1.tool.error", "interaction_dismissed")
    ]


async def _one_open_interaction(s: Scene) -> Any:
    with trio.fail_after(WAIT):
        while True:  # another process's state, polled as the e2e tests do
            listed = (await s.listed()).interactions
            if listed:
                (shown,) = listed
                return shown
            await trio.sleep(POLL)


async def test_the_bridge_tells_the_client_its_own_warnings_as_log_notifications(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    """The AppServer forgets the Agent's sessions (its tokens gone from its real database, as
    after a reset): the bridge's next sync is refused, it logs in again, and the client hears
    of both as MCP log notifications (an event name and a code, nothing else). The bridge's
    long poll in progress is ended by a message for the Agent (the result of a question the
    test's Agent asked before, answered after), not by its ten seconds."""
    s = await scene(nursery, data_dir)
    async with bridge_and_client(s) as (client, _log):
        await client.ask("list")
        asked = await s.ask("interaction.confirm", CONFIRM, "wake-1")
        database = _data_dir(s) / "devserver.db"
        assert database.exists()
        with sqlite3.connect(database, timeout=WAIT) as db:
            db.execute("DELETE FROM tokens WHERE principal_kind = 'agent'")
        await s.answer(asked.interaction_id, {"approved": True})
        refused = await client.wait_for(lambda line: _logged(line, "mcp.sync_failed"))
        again = await client.wait_for(lambda line: _logged(line, "mcp.logged_in_again"))
    assert refused["params"]["data"] == {
        "event": "mcp.sync_failed",
        "code": "unauthorized",
        "failures": 1,
    }
    assert again["params"]["data"] == {"event": "mcp.logged_in_again"}
    for told in (refused, again):
        assert (told["params"]["level"], told["params"]["logger"]) == ("warning", "lineup.mcp")


def _logged(line: dict[str, Any], event: str) -> bool:
    return line.get("note") == "log" and line["params"]["data"].get("event") == event


async def test_the_conformance_suites_server_scenarios_that_apply_pass(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    """The MCP conformance suite, as published on npm, run once under Node against the bridge:
    its every server scenario in one run (those that do not apply too, unread), over a tree."""
    suite = installed(CONFORMANCE)
    s = await scene(nursery, data_dir)
    port = free_port()
    async with trio.open_nursery() as inner:
        log = _data_dir(s).parent / "mcp-conformance.log"
        bridge = await inner.start(_bridge, _data_dir(s), port, log)
        await _listening(port)
        url = f"http://127.0.0.1:{port}/mcp"
        results = _data_dir(s).parent / "conformance"
        # One run of the suite's server scenarios (one Node start, not one per scenario),
        # each scenario's checks written to its own `checks.json`; those that do not apply
        # (the module's docstring) run too and are not read.
        ran = await trio.run_process(
            [
                _node(),
                "--import",
                str(HERE / "conformance_node20.mjs"),
                str(suite / "dist" / "index.js"),
                "server",
                "--url",
                url,
                "--output-dir",
                str(results),
            ],
            capture_stdout=True,
            capture_stderr=True,
            check=False,
        )
        bridge.terminate()
    said = ran.stdout.decode()[-3000:]
    # Each scenario's checks in `server-<scenario>-<timestamp>/checks.json`.
    checks = {path.parent.name: path for path in results.glob("*/checks.json")}
    failed: dict[str, list[str]] = {}
    for scenario in APPLICABLE:
        named = re.compile(rf"server-{re.escape(scenario)}-\d{{4}}-.+")
        [found] = [path for name, path in checks.items() if named.fullmatch(name)]
        verdicts = json.loads(found.read_text())
        refused = [c["name"] for c in verdicts if c["status"] == "FAILURE"]
        if refused or not verdicts:
            failed[scenario] = refused
    assert failed == {}, said
