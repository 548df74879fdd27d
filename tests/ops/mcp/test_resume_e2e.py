"""A dropped Streamable HTTP stream resumes: the official MCP client calls a tool through
`lineup mcp --http` on a real runtime, the network under it drops every connection while the
call waits for the user (a relay the test cuts), and the client reconnects with
`Last-Event-ID` and still gets the call's one result, from the bridge's event store."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any, Final

import mcp_types as types
import pytest
import trio
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from lineup.supervisor._runtime import free_port
from lineup.tests.e2e.test_mcp import _bridge_process, _data_dir, _listening
from lineup.tests.support.interactions import CONFIRM, POLL, Scene, scene

pytestmark = pytest.mark.slow

WAIT: Final = 30.0


class Relay:
    """TCP from a port of its own to `target`, both ways, until `cut` drops every connection
    open at that moment (new ones are relayed as before)."""

    def __init__(self, target: int) -> None:
        self.target = target
        self.accepted = 0
        self._open: list[tuple[trio.SocketStream, trio.SocketStream]] = []

    async def serve(self, *, task_status: trio.TaskStatus[int]) -> None:
        listeners = await trio.open_tcp_listeners(0, host="127.0.0.1")
        task_status.started(listeners[0].socket.getsockname()[1])
        await trio.serve_listeners(self._relay, listeners)

    async def cut(self) -> None:
        dropped, self._open = self._open, []
        for near, far in dropped:
            await near.aclose()
            await far.aclose()

    async def _relay(self, near: trio.SocketStream) -> None:
        self.accepted += 1
        far = await trio.open_tcp_stream("127.0.0.1", self.target)
        self._open.append((near, far))
        async with trio.open_nursery() as pumps:
            pumps.start_soon(_pump, near, far)
            pumps.start_soon(_pump, far, near)


async def _pump(source: trio.SocketStream, sink: trio.SocketStream) -> None:
    try:
        async for chunk in source:
            await sink.send_all(chunk)
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        pass
    with trio.CancelScope(shield=True):
        await sink.aclose()


@asynccontextmanager
async def relayed_bridge(s: Scene) -> AsyncIterator[tuple[str, Relay]]:
    port = free_port()
    async with trio.open_nursery() as nursery:
        bridge = await nursery.start(_bridge_process, _data_dir(s), port)
        await _listening(port)
        relay = Relay(port)
        relay_port = await nursery.start(relay.serve)
        try:
            yield f"http://127.0.0.1:{relay_port}/mcp", relay
        finally:
            bridge.terminate()
            nursery.cancel_scope.cancel()


async def test_a_dropped_http_stream_resumes_and_the_call_gets_its_one_result(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    s = await scene(nursery, data_dir)
    shown: list[Any] = []

    async def drop_then_answer(relay: Relay) -> int:
        """While the call waits for the user: every connection dropped, then the answer."""
        shown.append(await _one_open_interaction(s))
        connections = relay.accepted
        await relay.cut()
        await s.answer(shown[0].interaction_id, {"approved": True})
        return connections

    async with relayed_bridge(s) as (url, relay):
        token = trio.lowlevel.current_trio_token()

        def in_trio() -> int:
            return trio.from_thread.run(drop_then_answer, relay, trio_token=token)

        # The client as MCP hosts run it, under asyncio (in a thread of its own).
        result, connections = await trio.to_thread.run_sync(
            asyncio.run, _confirm_through(url, in_trio)
        )
        assert relay.accepted > connections  # the client came back…
    assert not result.is_error  # …and the call ended with its result, not a closed stream
    assert result.structured_content == {"approved": True}
    assert len(await s.finals_of(shown[0].call_id)) == 1


async def _confirm_through(
    url: str, meanwhile: Callable[[], int]
) -> tuple[types.CallToolResult, int]:
    """Call `interaction.confirm` and, while it runs, `meanwhile` (in a thread); the call's
    result and what `meanwhile` returned."""
    async with (
        streamable_http_client(url) as (read, write),
        ClientSession(read, write) as session,
    ):
        await asyncio.wait_for(session.initialize(), WAIT)
        call = asyncio.create_task(session.call_tool("interaction.confirm", CONFIRM))
        done = await asyncio.to_thread(meanwhile)
        return await asyncio.wait_for(call, WAIT), done


async def _one_open_interaction(s: Scene) -> Any:
    with trio.fail_after(WAIT):
        while True:  # another process's state, polled as the e2e tests do
            listed = (await s.listed()).interactions
            if listed:
                (shown,) = listed
                return shown
            await trio.sleep(POLL)
