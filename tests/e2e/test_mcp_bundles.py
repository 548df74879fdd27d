"""MCP servers as signed bundles (issue 31): `lineup app pack-mcp` packs the published
`@modelcontextprotocol/server-basic-vanillajs` (from npm, pinned by its integrity) and our own
Python server (`--dir`), each listed once in the sandbox, offline; the bundles go the one
delivery path there is — the local catalog, install, update, rollback, remove — and the Agent
lists and calls their tools through the runtime, each server run from its installed folder. A
bundle tampered in one byte is refused and installs nothing. Real processes throughout (but
pack-mcp's own `main`, run in the test's process): npm, the probe, the tree, the adapter and
the server it starts, the Agent over HTTP."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any, Final

import pytest
import trio

from lineup.actors.kernel import ActorKind, ErrorCode
from lineup.facts.npm_pins import BASIC_VANILLAJS
from lineup.sdk.bundle import read_header
from lineup.tests.support.agent_view import AgentView
from lineup.tests.support.bundles import (
    app_of,
    flip_byte,
    install,
    listing,
    manifest_in,
    operate,
    start_delivery,
    tree_digest,
    trust,
    write_catalog,
)
from lineup.tests.support.runtime import CONVERSATION, agent_client
from lineup.tests.support.session_builds import MCP_PACK_KEY, pack_mcp, shared_pack
from lineup.tests.support.tree import attach

SERVER = Path(__file__).resolve().parents[1] / "support" / "mcp_server"
OURS: Final = "our-test-server"
BASIC: Final = "server-basic-vanillajs"
KEY = MCP_PACK_KEY
WAIT = 40.0
pytestmark = pytest.mark.timeout(240)


@pytest.fixture(scope="module")
def bundles(tmp_path_factory: pytest.TempPathFactory) -> dict[str, bytes]:
    """Packed once for the module: ours at 1.0 and 2.0; and the npm server once for the
    session (the browser's catalog test takes the same bundle)."""
    folder = tmp_path_factory.mktemp("packs")
    key = folder / "key"
    key.write_text(KEY.dumps())
    key.chmod(0o600)
    signed = ("--key", str(key))
    basic = shared_pack(tmp_path_factory, KEY, *BASIC_VANILLAJS.spec_args(), "--", "--stdio")
    made = {"basic": basic}
    for version, source in (("1.0", SERVER), ("2.0", _with_two(folder / "two"))):
        made[version] = pack_mcp(
            "--dir", str(source), "--version", version, *signed, "--out", str(folder / version),
            "--", sys.executable, "server.py",
        )  # fmt: skip
    return made


def _with_two(folder: Path) -> Path:
    """Our server with one tool more, `two`: an update (and a rollback) changes the inventory."""
    folder.mkdir()
    source = (SERVER / "server.py").read_text()
    main = source.index('if __name__ == "__main__":')
    two = '@server.tool(description="Only in 2.0.")\ndef two() -> str:\n    return "2"\n\n\n'
    (folder / "server.py").write_text(source[:main] + two + source[main:])
    return folder


def test_pack_mcp_writes_a_kind_mcp_manifest_from_the_server_and_records_each_integrity(
    bundles: dict[str, bytes],
) -> None:
    """Its time is the module's `bundles`: `lineup app pack-mcp` run for real for each bundle
    (the published npm server's once a session), each starting its server to list its tools."""
    manifest = manifest_in(bundles["basic"])
    assert (manifest["app_scope"], manifest["version"], manifest["kind"]) == (
        BASIC,
        BASIC_VANILLAJS.version,
        "mcp",
    )
    assert manifest["mcp"]["command"] == [
        "node",
        f"node_modules/{BASIC_VANILLAJS.name}/dist/index.js",
        "--stdio",
    ]
    assert [t["method"] for t in manifest["tools"]] == [f"{BASIC}.get-time"]
    signed, _ = read_header(bundles["basic"])
    assert (signed.app_scope, signed.key_id) == (BASIC, KEY.key_id)
    ours = manifest_in(bundles["1.0"])
    assert (ours["app_scope"], ours["version"]) == (OURS, "1.0")
    assert ours["mcp"]["command"] == [sys.executable, "server.py"]


async def test_the_npm_server_from_the_catalog_installs_and_the_agent_calls_its_tool(
    nursery: trio.Nursery, data_dir: Path, tmp_path: Path, bundles: dict[str, bytes]
) -> None:
    """A whole tree, a catalog install, then the published npm server started in its sandbox
    under Node for the Agent's call: each a real process, which is the claim."""
    file = f"{BASIC}-{BASIC_VANILLAJS.version}.lineup"
    folder = write_catalog(tmp_path / "catalog", KEY, {file: bundles["basic"]})
    runtime = await start_delivery(nursery, data_dir, catalog=folder)
    agent = AgentView(await agent_client(nursery, runtime.appserver_url), wait_s=WAIT)
    cli = await attach(nursery, runtime.supervisor, ActorKind.GATEWAY, "probe-gw")
    offered = next(e for e in (await listing(cli)).catalog if e.file == file)
    assert (offered.app_scope, offered.code) == (BASIC, None)

    done = await install(cli, "op-basic", catalog_file=file)
    assert (done.state, done.kind, done.version) == ("completed", "install", "2.0.3")
    installed = data_dir / "bundles" / BASIC / "2.0.3" / "app" / "server"
    lock = json.loads((installed / "mcp-lock.json").read_text())
    pinned = {p["name"]: p["hash"] for p in lock["packages"]}
    assert pinned[BASIC_VANILLAJS.name] == BASIC_VANILLAJS.integrity
    assert all(h.startswith("sha512-") for h in pinned.values())

    revision = await agent.revision_with(f"{BASIC}.get-time")
    await agent.client.call_tool(CONVERSATION, f"{BASIC}.get-time", {}, revision, call_id="time-1")
    done_call = await agent.terminal("time-1")
    assert done_call["type"] == "lineup.v1.tool.result", done_call
    assert set(done_call["payload"]["result"]) == {"time"}
    assert len(agent.of_call("time-1", "lineup.v1.tool.result", "lineup.v1.tool.error")) == 1


async def _newer(agent: AgentView, above: str, *, two: bool) -> str:
    """The first inventory revision above `above` that lists `add`, and `two` or not."""

    def wanted(message: dict[str, Any]) -> bool:
        tools = {t["method"] for t in message["payload"]["tools"]}
        return (
            int(message["payload"]["revision"]) > int(above)
            and f"{OURS}.add" in tools
            and (f"{OURS}.two" in tools) == two
        )

    told = await agent.pull("lineup.v1.client.inventory", wanted)
    return str(told["payload"]["revision"])


async def _add(agent: AgentView, revision: str, call_id: str) -> dict[str, Any]:
    await agent.client.call_tool(
        CONVERSATION, f"{OURS}.add", {"a": 2, "b": 3}, revision, call_id=call_id
    )
    done: dict[str, Any] = await agent.terminal(call_id)
    return done


async def test_our_server_installs_updates_rolls_back_and_is_removed_and_a_tampered_one_is_not(
    nursery: trio.Nursery, data_dir: Path, bundles: dict[str, bytes]
) -> None:
    """About five seconds quiet, over ten on a loaded machine, by what it proves: each version
    the Agent calls (1.0, 2.0, then 1.0 again after the rollback) is a real start of the server
    in the sandbox, an interpreter importing the `mcp` SDK, so the answer is that version's."""
    trust(data_dir, KEY.public)
    runtime = await start_delivery(nursery, data_dir)
    agent = AgentView(await agent_client(nursery, runtime.appserver_url), wait_s=WAIT)
    cli = await attach(nursery, runtime.supervisor, ActorKind.GATEWAY, "probe-gw")

    tampered = await install(cli, "op-bad", flip_byte(bundles["1.0"]))
    assert (tampered.state, tampered.code) == ("failed", ErrorCode.DIGEST_MISMATCH.value)
    assert tree_digest(data_dir / "bundles") == ""

    done = await install(cli, "op-1", bundles["1.0"])
    assert (done.state, done.kind, done.version) == ("completed", "install", "1.0")
    rev1 = await agent.revision_with(f"{OURS}.add")
    first = await _add(agent, rev1, "add-1")
    assert (first["type"], first["payload"]["result"]) == ("lineup.v1.tool.result", {"result": 5})
    # It ran from its installed folder: the adapter's child's cwd.
    folder = data_dir / "bundles" / OURS / "1.0" / "app" / "server"
    assert (folder / "server.py").read_bytes() == (SERVER / "server.py").read_bytes()

    done = await install(cli, "op-2", bundles["2.0"])
    assert (done.state, done.kind, done.from_version) == ("completed", "update", "1.0")
    rev2 = await _newer(agent, rev1, two=True)
    second = await _add(agent, rev2, "add-2")
    assert second["type"] == "lineup.v1.tool.result", second
    await agent.client.call_tool(CONVERSATION, f"{OURS}.two", {}, rev2, call_id="two-1")
    assert (await agent.terminal("two-1"))["payload"]["result"] == {"result": "2"}
    assert (app_of(await listing(cli), OURS).version, app_of(await listing(cli), OURS).kind) == (
        "2.0",
        "mcp",
    )

    done = await operate(cli, "op-back", "rollback", OURS)
    assert (done.state, done.kind) == ("completed", "rollback")
    assert app_of(await listing(cli), OURS).version == "1.0"
    third = await _add(agent, await _newer(agent, rev2, two=False), "add-3")
    assert third["type"] == "lineup.v1.tool.result", third

    done = await operate(cli, "op-rm", "remove", OURS)
    assert done.state == "completed"
    assert app_of(await listing(cli), OURS) is None
    assert not (data_dir / "bundles" / OURS).exists()
