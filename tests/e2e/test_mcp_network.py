"""An MCP server's network (`lineup.sdk.mcp_network`): none, unless its manifest declares the
host and the user grants `mcp.network`; then exactly that host, through the proxy in its
network namespace and the gateway's dial. "The network" is a real TCP server on this machine;
the server is our own (`tests/support/mcp_server/env_server.py`, its `fetch` tool a CONNECT
through $HTTPS_PROXY), imported with `lineup app import-mcp --network`. Real processes
throughout: the tree, the sandboxed adapter and its server, the Agent over HTTP."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import trio

from lineup.actors.kernel import ActorKind
from lineup.tests.support.agent_view import AgentView
from lineup.tests.support.runtime import CONVERSATION, agent_client, start_runtime
from lineup.tests.support.tree import attach, audit_rows

SERVER = Path(__file__).resolve().parents[1] / "support" / "mcp_server" / "env_server.py"
SCOPE = "net"
pytestmark = pytest.mark.timeout(150)


async def _echo(listener: trio.SocketListener) -> None:
    """A host of "the network": answers one line with that line."""

    async def serve(stream: trio.SocketStream) -> None:
        async with stream:
            line = b""
            while not line.endswith(b"\n"):
                data = await stream.receive_some(1024)
                if not data:
                    return
                line += data
            await stream.send_all(line)

    await trio.serve_listeners(serve, [listener])


def _import(rt: Path, *more: str) -> None:
    config = rt.parent / "config.json"
    config.write_text(
        json.dumps({"mcpServers": {SCOPE: {"command": sys.executable, "args": [str(SERVER)]}}})
    )
    command = [sys.executable, "-m", "lineup", "app", "import-mcp", str(config)]
    done = subprocess.run(
        [*command, "--server", SCOPE, "--data-dir", str(rt), *more],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr


async def _fetches(
    rt: Path, policy: str, targets: dict[str, int], *, audit: bool = False
) -> tuple[dict[str, Any], list[tuple[str, str | None]]]:
    """Each target's `fetch` answer, from a runtime whose host policy for `mcp.network` is
    `policy`; and, with `audit`, the gateway's audit rows of the app's connections."""
    answers: dict[str, Any] = {}
    rows: list[tuple[str, str | None]] = []
    async with trio.open_nursery() as nursery:
        runtime = await start_runtime(
            nursery,
            rt,
            demo_agent=False,
            capabilities={"policy": {SCOPE: {"mcp.network": policy}}},
        )
        agent = AgentView(await agent_client(nursery, runtime.appserver_url), wait_s=40.0)
        revision = await agent.revision_with(f"{SCOPE}.fetch")
        for name, port in targets.items():
            await agent.client.call_tool(
                CONVERSATION,
                f"{SCOPE}.fetch",
                {"host": "127.0.0.1", "port": port},
                revision,
                call_id=f"fetch-{name}",
            )
            answers[name] = (await agent.terminal(f"fetch-{name}"))["payload"]["result"]
        if audit:
            auditor = await attach(nursery, runtime.supervisor, ActorKind.ROUTER, "auditor")
            found = await audit_rows(
                auditor,
                lambda found: any(r.event == "gateway.mcp_net_refused" for r in found),
                event_prefix="gateway.mcp_net",
            )
            rows = [(r.event, r.code) for r in found]
        nursery.cancel_scope.cancel()
    return answers, rows


async def test_a_granted_server_reaches_its_declared_host_and_no_other(data_dir: Path) -> None:
    rt = data_dir / "rt"
    async with trio.open_nursery() as network:
        declared = (await trio.open_tcp_listeners(0, host="127.0.0.1"))[0]
        other = (await trio.open_tcp_listeners(0, host="127.0.0.1"))[0]
        network.start_soon(_echo, declared)
        network.start_soon(_echo, other)
        port = declared.socket.getsockname()[1]
        other_port = other.socket.getsockname()[1]
        await trio.to_thread.run_sync(_import, rt, "--network", f"127.0.0.1:{port}")
        answers, rows = await _fetches(
            rt, "allow", {"declared": port, "other": other_port}, audit=True
        )
        network.cancel_scope.cancel()
    assert answers["declared"] == {"status": "200", "error": "", "echo": "ping"}
    assert answers["other"] == {"status": "403", "error": "mcp_network_undeclared", "echo": ""}
    assert ("gateway.mcp_net_opened", None) in rows
    assert ("gateway.mcp_net_refused", "mcp_network_undeclared") in rows


async def test_without_the_users_grant_or_a_declaration_nothing_connects(data_dir: Path) -> None:
    async with trio.open_nursery() as network:
        declared = (await trio.open_tcp_listeners(0, host="127.0.0.1"))[0]
        network.start_soon(_echo, declared)
        port = declared.socket.getsockname()[1]
        undeclared_rt = data_dir / "undeclared" / "rt"
        undeclared_rt.parent.mkdir()
        await trio.to_thread.run_sync(_import, undeclared_rt)  # declaring nothing
        undeclared, _ = await _fetches(undeclared_rt, "allow", {"declared": port})
        denied_rt = data_dir / "denied" / "rt"
        denied_rt.parent.mkdir()
        await trio.to_thread.run_sync(_import, denied_rt, "--network", f"127.0.0.1:{port}")
        denied, _ = await _fetches(denied_rt, "deny", {"declared": port})
        network.cancel_scope.cancel()
    assert denied["declared"] == {"status": "403", "error": "policy_denied", "echo": ""}
    # No declaration, no proxy: the server has no way out at all.
    assert undeclared["declared"] == {"status": "no-proxy", "error": "", "echo": ""}
