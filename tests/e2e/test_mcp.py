"""`lineup mcp` end to end: the official MCP client (`ClientSession`, over stdio and over
streamable HTTP) against `python -m lineup mcp` in its own process, connected to a real
runtime's embedded AppServer (no demo Agent), found through `--data-dir`."""

from __future__ import annotations

import asyncio
import base64
import os
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
import trio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client

import lineup
from lineup.actors.focus.messages import AppEnableRequest, InventoryReply
from lineup.supervisor._runtime import free_port
from lineup.tests.support.agent_view import FINALS
from lineup.tests.support.interactions import CONFIRM, POLL, Scene, scene, scene_on
from lineup.tests.support.picture_app import Picture
from lineup.tests.support.runtime import kill_and_wait_restarted, start_runtime_with_app

pytestmark = pytest.mark.slow

WAIT = 30.0
# The folder `lineup` is importable from (as imported: a checkout's parent folder may hold
# other checkouts, and one named `mcp` would shadow the SDK).
ROOT = str(Path(lineup.__file__).parent.parent)


class Seen:
    """What the client was told outside the answers: notifications, in order."""

    def __init__(self) -> None:
        self.notifications: list[Any] = []
        self.changed = trio.Event()

    async def __call__(self, message: Any) -> None:
        self.notifications.append(message)
        self.changed.set()
        self.changed = trio.Event()

    async def wait_for(self, kind: type, *, after: int = 0) -> Any:
        """The first notification of `kind` among those told after the first `after`."""
        with trio.fail_after(WAIT):
            while True:
                for message in self.notifications[after:]:
                    if isinstance(message, kind):
                        return message
                await self.changed.wait()


def _env() -> dict[str, str]:
    path = os.environ.get("PYTHONPATH", "")
    return {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{path}" if path else ROOT}


@asynccontextmanager
async def mcp_session(data_dir: Path) -> AsyncIterator[tuple[ClientSession, Seen]]:
    """A `ClientSession` with `lineup mcp --data-dir` over stdio (initialized), and what it
    was told."""
    seen = Seen()
    args = ["-m", "lineup", "mcp", "--data-dir", str(data_dir)]
    params = StdioServerParameters(command=sys.executable, args=args, env=_env())
    with open(os.devnull, "w") as errlog:  # noqa: ASYNC230 - the bridge's stderr, unread
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write, message_handler=seen) as session,
        ):
            with trio.fail_after(WAIT):
                await session.initialize()
            yield session, seen


def _data_dir(s: Scene) -> Path:
    return s.runtime.supervisor.data_dir


class Steps:
    """An MCP progress callback: every line, and a signal per line (anyio: the scenario runs
    under trio or asyncio)."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.values: list[float] = []
        self.changed = anyio.Event()

    async def __call__(self, progress: float, total: float | None, message: str | None) -> None:
        self.values.append(progress)
        self.lines.append(message or "")
        self.changed.set()
        self.changed = anyio.Event()

    async def wait_for(self, line: str) -> None:
        with anyio.fail_after(WAIT):
            while not any(line in seen for seen in self.lines):
                await self.changed.wait()


async def list_open_update_refuse(session: ClientSession) -> None:
    """The scenario of one client: list the tools, open a task (its receipts and progress
    seen), update it (its one result), be refused (the code), give up the open."""
    with anyio.fail_after(WAIT):
        listed = await session.list_tools()
    names = [t.name for t in listed.tools]
    assert {"task-dashboard.open", "task-dashboard.update", "interaction.confirm"} <= set(names)
    app_tools = [n for n in names if not n.startswith("conversation.")]
    assert app_tools == sorted(app_tools)
    assert names[-2:] == ["conversation.say", "conversation.next_message"]
    open_tool = next(t for t in listed.tools if t.name == "task-dashboard.open")
    assert open_tool.description == "Show a task to the user until they finish or close it."
    assert open_tool.input_schema["required"] == ["task_id", "title"]
    assert open_tool.output_schema is not None

    steps = Steps()
    opened: list[types.CallToolResult] = []
    async with anyio.create_task_group() as calls:

        async def open_task() -> None:
            opened.append(
                await session.call_tool(
                    "task-dashboard.open",
                    {"task_id": "t1", "title": "Quarterly report"},
                    progress_callback=steps,
                )
            )

        calls.start_soon(open_task)
        await steps.wait_for("activation_ready")
        await steps.wait_for("t1")  # the app's own progress: {"opened": "t1"}
        assert steps.lines[0] == "accepted"
        assert steps.values == sorted(set(steps.values))  # strictly growing

        with anyio.fail_after(WAIT):
            updated = await session.call_tool(
                "task-dashboard.update", {"task_id": "t1", "progress": 100}
            )
        assert not updated.is_error
        assert updated.structured_content is not None
        assert updated.structured_content["progress"] == 100
        assert updated.structured_content["status"] == "done"

        with anyio.fail_after(WAIT):
            refused = await session.call_tool(
                "task-dashboard.update", {"task_id": "t1", "bogus": 1}
            )
        assert refused.is_error and refused.structured_content is None  # see docs/mcp.md
        assert [c.text for c in refused.content if isinstance(c, types.TextContent)] == [
            "error: tool_input_invalid at /bogus"
        ]
        # The open waits for the user to close the task: the client gives up on it.
        calls.cancel_scope.cancel()
    assert opened == []


async def _http_client(port: int) -> None:
    async with (
        streamable_http_client(f"http://127.0.0.1:{port}/mcp") as (read, write),
        ClientSession(read, write) as session,
    ):
        with anyio.fail_after(WAIT):
            await session.initialize()
        await list_open_update_refuse(session)


async def _agent_finals(s: Scene) -> list[str]:
    await s.agent.settle()
    return [m["type"] for m in s.agent.seen if m["type"] in FINALS]


async def test_the_stdio_client_lists_calls_sees_progress_gets_one_result_and_a_refusals_code(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    """Then, on the same bridge (a process importing the MCP SDK: what such a test costs),
    the conversation as two tools and a resource."""
    s = await scene(nursery, data_dir)
    async with mcp_session(_data_dir(s)) as (session, _seen):
        await list_open_update_refuse(session)
        # The Agent side has the update's one result and the refusal; none for the open (shown).
        assert await _agent_finals(s) == list(FINALS)
        await _the_conversation_is_two_tools_and_a_resource(session)


async def test_the_http_client_lists_calls_sees_progress_gets_one_result_and_a_refusals_code(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    s = await scene(nursery, data_dir)
    port = free_port()
    async with trio.open_nursery() as inner:
        bridge = await inner.start(_bridge_process, _data_dir(s), port)
        await _listening(port)
        # The client as MCP hosts run it, under asyncio (in a thread of its own).
        await trio.to_thread.run_sync(asyncio.run, _http_client(port))
        bridge.terminate()
    assert await _agent_finals(s) == list(FINALS)


async def _bridge_process(
    data_dir: Path, port: int, *, task_status: trio.TaskStatus[trio.Process]
) -> None:
    args = [sys.executable, "-m", "lineup", "mcp", "--data-dir", str(data_dir)]
    await trio.run_process(
        [*args, "--http", str(port)], env=_env(), check=False, task_status=task_status
    )


async def _listening(port: int) -> None:
    with trio.fail_after(WAIT):
        while True:  # until it listens: each try is one refused connection
            try:
                with trio.socket.socket() as probe:
                    await probe.connect(("127.0.0.1", port))
                return
            except OSError:
                await trio.sleep(POLL)


async def test_disabling_an_app_sends_list_changed_and_its_tools_are_gone(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    s = await scene(nursery, data_dir)
    async with mcp_session(_data_dir(s)) as (session, seen):
        with trio.fail_after(WAIT):
            before = await session.list_tools()
        assert "task-dashboard.open" in {t.name for t in before.tools}
        # The list_changed this disable causes, not one of an inventory the runtime published
        # before (a new session's, which may reach the bridge after its first list).
        told = len(seen.notifications)
        await s.ui.request(
            "focus",
            AppEnableRequest(app_scope="task-dashboard", enabled=False),
            expect=InventoryReply,
        )
        await seen.wait_for(types.ToolListChangedNotification, after=told)
        with trio.fail_after(WAIT):
            after = await session.list_tools()
        names = {t.name for t in after.tools}
        assert not any(n.startswith("task-dashboard.") for n in names)
        assert "interaction.confirm" in names


async def test_an_appserver_restarted_during_a_call_leaves_it_completed_exactly_once(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    s = await scene(nursery, data_dir)
    async with mcp_session(_data_dir(s)) as (session, _seen):
        results: list[types.CallToolResult] = []
        done = trio.Event()

        async def confirm() -> None:
            results.append(await session.call_tool("interaction.confirm", CONFIRM))
            done.set()

        async with trio.open_nursery() as calls:
            calls.start_soon(confirm)
            with trio.fail_after(WAIT):
                while True:  # another process's state, polled as the e2e tests do
                    listed = (await s.listed()).interactions
                    if listed:
                        break
                    await trio.sleep(POLL)
            asked = listed[0]
            await kill_and_wait_restarted(s.runtime, "devserver")
            await s.answer(asked.interaction_id, {"approved": True})
            with trio.fail_after(WAIT):
                await done.wait()
        assert results[0].structured_content == {"approved": True}
        assert asked.call_id is not None
        assert len(await s.finals_of(asked.call_id)) == 1


async def _the_conversation_is_two_tools_and_a_resource(session: ClientSession) -> None:
    with trio.fail_after(WAIT):
        said = await session.call_tool("conversation.say", {"markdown": "Hello **there**"})
    assert not said.is_error
    with trio.fail_after(WAIT):
        waited = await session.call_tool("conversation.next_message", {"timeout_s": 0.2})
    assert waited.structured_content == {"timed_out": True}
    resource = await session.read_resource("lineup://conversation/messages")
    shown = resource.contents[0]
    assert isinstance(shown, types.TextResourceContents)
    assert "Hello **there**" in shown.text


async def test_a_png_inline_in_a_result_reaches_the_model_as_image_content(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    """As `draw-and-guess.get_drawing` answers its drawing: the tool's `png_base64` is MCP
    image content (a real PNG), beside the JSON as text; the structured result is unchanged."""
    runtime = await start_runtime_with_app(nursery, data_dir, Picture, title="Picture")
    s = await scene_on(nursery, runtime)
    async with mcp_session(_data_dir(s)) as (session, _seen):
        with trio.fail_after(WAIT):
            drawn = await session.call_tool("picture.draw", {"title": "Hi"})
    assert not drawn.is_error
    text, image = drawn.content
    assert isinstance(text, types.TextContent) and isinstance(image, types.ImageContent)
    assert image.mime_type == "image/png"
    assert base64.b64decode(image.data).startswith(b"\x89PNG\r\n\x1a\n")
    assert drawn.structured_content is not None
    assert drawn.structured_content["png_base64"] == image.data
    assert image.data not in text.text  # the text names the image, it does not repeat it
