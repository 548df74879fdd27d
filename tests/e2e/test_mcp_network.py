"""An MCP server's network (`lineup.sdk.mcp_network`): none, unless its manifest declares the
host and the user grants `mcp.network`; then exactly that host, through the proxy in its
network namespace and the gateway's dial. "The network" is a real TCP server on this machine;
the server is our own (`tests/support/mcp_server/env_server.py`, its `fetch` tool a CONNECT
through $HTTPS_PROXY), imported as `lineup app import-mcp --network` imports it (its function,
`import_server`, in the test's process: the command itself is `test_mcp_import.py`'s). Real
processes throughout: the tree, the sandboxed adapter and its server, the Agent over HTTP."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import pytest
import trio

from lineup.actors.kernel import ActorKind
from lineup.supervisor._mcp_import import ImportedServer, import_server
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


async def _import(rt: Path, scope: str, *network: str) -> None:
    """Our server imported into `rt` as `scope`, its manifest declaring `network`."""
    server = ImportedServer(scope, sys.executable, (str(SERVER),))
    rt.mkdir(mode=0o700, parents=True, exist_ok=True)
    await trio.to_thread.run_sync(lambda: import_server(server, rt, network=network))


async def _fetches(
    rt: Path, policies: dict[str, str], targets: dict[str, int], *, audit: bool = False
) -> tuple[dict[tuple[str, str], Any], list[tuple[str, str | None]]]:
    """Each imported app's (`policies`: its scope → the user's policy for its `mcp.network`)
    `fetch` answer for each target, by (scope, target); and, with `audit`, the gateway's
    audit rows of the apps' connections."""
    answers: dict[tuple[str, str], Any] = {}
    rows: list[tuple[str, str | None]] = []
    async with trio.open_nursery() as nursery:
        runtime = await start_runtime(
            nursery,
            rt,
            demo_agent=False,
            capabilities={"policy": {s: {"mcp.network": p} for s, p in policies.items()}},
        )
        agent = AgentView(await agent_client(nursery, runtime.appserver_url), wait_s=40.0)
        for scope in policies:
            revision = await agent.revision_with(f"{scope}.fetch")
        for scope in policies:
            for name, port in targets.items():
                call_id = f"fetch-{scope}-{name}"
                await agent.client.call_tool(
                    CONVERSATION,
                    f"{scope}.fetch",
                    {"host": "127.0.0.1", "port": port},
                    revision,
                    call_id=call_id,
                )
                answers[scope, name] = (await agent.terminal(call_id))["payload"]["result"]
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
        await _import(rt, SCOPE, f"127.0.0.1:{port}")
        answers, rows = await _fetches(
            rt, {SCOPE: "allow"}, {"declared": port, "other": other_port}, audit=True
        )
        network.cancel_scope.cancel()
    assert answers[SCOPE, "declared"] == {"status": "200", "error": "", "echo": "ping"}
    assert answers[SCOPE, "other"] == {
        "status": "403",
        "error": "mcp_network_undeclared",
        "echo": "",
    }
    assert ("gateway.mcp_net_opened", None) in rows
    assert ("gateway.mcp_net_refused", "mcp_network_undeclared") in rows


async def test_without_the_users_grant_or_a_declaration_nothing_connects(data_dir: Path) -> None:
    """Two apps of one tree: one declaring nothing (its policy would allow), one declaring
    the host that the user denies. About ten seconds, more under load, by what it proves: two
    MCP servers started in the sandbox by a real tree, each trying a real connection."""
    rt = data_dir / "rt"
    async with trio.open_nursery() as network:
        declared = (await trio.open_tcp_listeners(0, host="127.0.0.1"))[0]
        network.start_soon(_echo, declared)
        port = declared.socket.getsockname()[1]
        await _import(rt, "undeclared")  # declaring nothing
        await _import(rt, "denied", f"127.0.0.1:{port}")
        answers, _ = await _fetches(
            rt, {"undeclared": "allow", "denied": "deny"}, {"declared": port}
        )
        network.cancel_scope.cancel()
    assert answers["denied", "declared"] == {"status": "403", "error": "policy_denied", "echo": ""}
    # No declaration, no proxy: the server has no way out at all.
    assert answers["undeclared", "declared"] == {"status": "no-proxy", "error": "", "echo": ""}
