"""The published MCP servers nobody here wrote, as signed bundles (issue 31): `lineup app
pack-mcp` packs `@modelcontextprotocol/server-everything` and `server-basic-react` from npm,
pinned by their integrity (the basic vanillajs server and our own are packed in
`test_mcp_bundles.py`), each listed once in the sandbox, offline; a key is trusted, both
install into one tree, and the Agent calls a tool of each through the runtime and gets one
result per call, each server run from its installed folder. Real processes throughout, but
pack-mcp's own `main`, run in the test's process (`session_builds.pack_mcp`)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Final

import pytest
import trio

from lineup.actors.kernel import ActorKind
from lineup.sdk.bundle import SigningKey
from lineup.tests.support.agent_view import AgentView
from lineup.tests.support.bundles import install, manifest_in, start_delivery, trust
from lineup.tests.support.mcp_time_app import MCP_REACT_APP_PACKAGE
from lineup.tests.support.runtime import CONVERSATION, agent_client
from lineup.tests.support.session_builds import pack_mcp
from lineup.tests.support.tree import attach

from .test_mcp_everything import EVERYTHING

KEY = SigningKey(b"\x32" * 32)
WAIT: Final = 40.0
RESULT: Final = "lineup.v1.tool.result"
# Each package: its pin, and the arguments its stdio entry takes.
PACKAGES: Final = {
    "server-everything": ((EVERYTHING.name, EVERYTHING.version, EVERYTHING.integrity), "stdio"),
    "server-basic-react": (MCP_REACT_APP_PACKAGE, "--stdio"),
}
pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def bundles(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Both packed once for the module, side by side (each is mostly npm and the probe); each
    is several MiB, installed from its file (a bus frame holds 1 MiB)."""
    folder = tmp_path_factory.mktemp("packs")
    key = folder / "key"
    key.write_text(KEY.dumps())
    key.chmod(0o600)

    def packed(scope: str) -> Path:
        (name, version, integrity), stdio = PACKAGES[scope]
        pack_mcp(
            "--npm", f"{name}@{version}", "--integrity", integrity, "--key", str(key),
            "--out", str(folder / f"{scope}.lineup"), "--", stdio,
        )  # fmt: skip
        return folder / f"{scope}.lineup"

    with ThreadPoolExecutor(len(PACKAGES)) as pool:
        return dict(zip(PACKAGES, pool.map(packed, PACKAGES), strict=True))


async def test_the_published_servers_pack_install_and_answer_the_agent_once_per_call(
    nursery: trio.Nursery, data_dir: Path, bundles: dict[str, Path]
) -> None:
    """Over ten seconds with its fixture, by what it proves: two real npm installs of servers
    nobody here wrote, each listed in the sandbox, packed (several MiB), verified, installed
    and run. Each is packed once, here alone (no other test takes them)."""
    for scope, bundle in bundles.items():
        manifest = manifest_in(bundle.read_bytes())
        assert (manifest["app_scope"], manifest["kind"]) == (scope, "mcp")
    # The react server's tool opens its UI, which came in the bundle.
    react = manifest_in(bundles["server-basic-react"].read_bytes())
    [linked] = [t for t in react["tools"] if t["method"] == "server-basic-react.get-time"]
    assert linked["ui"]["entrypoint"] in {e["id"] for e in react["entrypoints"]}

    trust(data_dir, KEY.public)
    runtime = await start_delivery(nursery, data_dir)
    agent = AgentView(await agent_client(nursery, runtime.appserver_url), wait_s=WAIT)
    cli = await attach(nursery, runtime.supervisor, ActorKind.GATEWAY, "probe-gw")
    for scope, bundle in bundles.items():
        done = await install(cli, f"op-{scope}", path=str(bundle))
        assert (done.state, done.kind) == ("completed", "install"), done

    revision = await agent.revision_with("server-basic-react.get-time")
    calls = {
        "echo-1": ("server-everything.echo", {"message": "hi"}),
        "time-1": ("server-basic-react.get-time", {}),
    }
    for call_id, (tool, arguments) in calls.items():
        await agent.client.call_tool(CONVERSATION, tool, arguments, revision, call_id=call_id)
    echoed = await agent.terminal("echo-1")
    assert (echoed["type"], echoed["payload"]["result"]) == (
        RESULT,
        {"content": [{"type": "text", "text": "Echo: hi"}]},
    )
    timed = await agent.terminal("time-1")
    assert timed["type"] == RESULT, timed
    assert timed["payload"]["result"]["content"][0]["type"] == "text"
    await agent.settle()
    for call_id in calls:
        assert len(agent.of_call(call_id, RESULT, "lineup.v1.tool.error")) == 1
