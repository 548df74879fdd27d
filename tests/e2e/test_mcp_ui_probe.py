"""An MCP server's UI read into its app (issue 31): our own server with MCP App UIs
(`tests/support/mcp_ui_server`, the official SDK) is listed in its sandbox as `lineup run
--dev-mcp` does, and the probe reads each `ui://` resource its tools link to (`resources/read`)
into the app's manifest, as a Surface entrypoint declaring `mcp_app`, and its folder, as that
entrypoint's document: a resource of another type, over the bound or missing leaves its tool
without a UI, with the reason; an app-only tool never reaches the Agent, and the page's own
`tools/call` of it (relayed as the hostbridge does) is run by the server. Real processes: the
probe in the sandbox, the server, the runtime and the Agent over HTTP."""

from __future__ import annotations

import argparse
import base64
import sys
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import trio

from lineup.actors.focus.messages import (
    SurfaceResourceReadReply,
    SurfaceResourceReadRequest,
    SurfaceToolCallReply,
    SurfaceToolCallRequest,
    ViewsReply,
    ViewsRequest,
)
from lineup.actors.kernel import ActorKind, ErrorCode, LineUpError
from lineup.sdk.manifest import load_manifest
from lineup.sdk.mcp_apps import McpAppCsp, McpAppUi
from lineup.supervisor import _run_cli
from lineup.supervisor._run_cli import _dev_mcp_apps
from lineup.tests.support.agent_view import AgentView
from lineup.tests.support.runtime import CONVERSATION, agent_client, start_runtime
from lineup.tests.support.session_builds import shared_dev_mcp
from lineup.tests.support.tree import attach

SERVER = Path(__file__).resolve().parents[1] / "support" / "mcp_ui_server"
SCOPE = "our-ui-server"
RESULT = "lineup.v1.tool.result"
pytestmark = pytest.mark.timeout(120)


def _listed(factory: pytest.TempPathFactory, folder: Path, command: list[str], rt: Path) -> Any:
    """`dev_mcp`'s entry and the app's folder in `rt`: the server listed in its sandbox by
    the real `dev_mcp`, once for this module's two tests (`shared_dev_mcp`)."""
    assert (folder, command) == (SERVER, [sys.executable, "server.py"])
    return shared_dev_mcp(factory, folder, command, rt)


async def test_the_servers_ui_resources_become_its_surfaces_and_the_rest_say_why_not(
    data_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    rt = data_dir / "rt"
    rt.mkdir(mode=0o700, parents=True)
    command = [sys.executable, "server.py"]
    entry = await trio.to_thread.run_sync(_listed, tmp_path_factory, SERVER, command, rt)
    manifest = load_manifest(Path(entry["manifest"]).read_text())
    web = Path(entry["manifest"]).parent / "web"

    # One entrypoint per readable page of the spec's type, its `_meta.ui` mapped.
    assert {e.id: e.mcp_app for e in manifest.entrypoints} == {
        "ours-page": McpAppUi(
            csp=McpAppCsp(connect_domains=("https://api.example.com",)),
            permissions=("clipboard_write",),
            prefers_border=True,
        ),
        "ours-legacy": McpAppUi(),
    }
    for entrypoint in manifest.entrypoints:
        assert entrypoint.kind == "surface"
        assert "<p id='ours'>" in (web / entrypoint.document).read_text()
    assert sorted(p.name for p in (web / "mcp-ui").iterdir()) == [
        "ours-legacy.html",
        "ours-page.html",
    ]
    tools = {t.method.removeprefix(f"{SCOPE}."): t for t in manifest.tools}
    linked = {name: (t.ui.entrypoint, t.ui.visibility) for name, t in tools.items() if t.ui}
    assert linked == {
        "show": ("ours-page", ("model", "app")),
        "refresh": ("ours-page", ("app",)),
        "legacy": ("ours-legacy", ("model", "app")),
    }
    # The Agent's UI-linked tools start the app in front; the others are as before.
    assert {n: t.handling for n, t in tools.items()} == {
        "show": "launch",
        "refresh": "direct",
        "legacy": "launch",
        "plain": "direct",
        "huge": "direct",
        "missing": "direct",
    }
    assert "refused" not in entry  # every tool stays
    assert set(entry["ui_refused"].split()) == {
        "ui://ours/plain:ui_resource_not_mcp_app",
        "ui://ours/huge:ui_resource_too_big",
        "ui://ours/missing:ui_resource_unreadable",
    }

    # The app-only tool is not the Agent's; every other one is.
    async with trio.open_nursery() as nursery:
        runtime = await start_runtime(nursery, rt, extra_apps=(entry,), demo_agent=False)
        agent = AgentView(await agent_client(nursery, runtime.appserver_url), wait_s=40.0)
        revision = await agent.revision_with(f"{SCOPE}.show")
        inventory = [m for m in agent.seen if m["type"] == "lineup.v1.client.inventory"][-1]
        ours = {t["method"] for t in inventory["payload"]["tools"] if t["app_scope"] == SCOPE}
        assert ours == {f"{SCOPE}.{n}" for n in ("show", "legacy", "plain", "huge", "missing")}

        # The Agent's call opens the page; the page's own calls (as the hostbridge relays
        # them) reach the server: the app-only tool by its bare name, run by the server.
        await agent.client.call_tool(CONVERSATION, f"{SCOPE}.show", {"word": "hi"}, revision)
        shown = await agent.pull(RESULT, lambda m: m["payload"]["result"] == {"result": "hi"})
        assert shown["payload"]["result"] == {"result": "hi"}
        bridge = await attach(nursery, runtime.supervisor, ActorKind.HOSTBRIDGE, "hostbridge-t")
        views = await bridge.request("focus", ViewsRequest(), expect=ViewsReply)
        [page] = [v for v in views.views if v.app_scope == SCOPE and "surface_id" in v.view]

        async def page_calls(name: str) -> dict[str, Any]:
            asked = SurfaceToolCallRequest(
                instance_id=page.instance_id, surface_id=page.view["surface_id"], name=name
            )
            reply = await bridge.request("focus", asked, expect=SurfaceToolCallReply)
            return reply.result

        fresh = await page_calls("refresh")
        assert (fresh["isError"], fresh["structuredContent"]) == (False, {"result": "fresh"})
        with pytest.raises(LineUpError) as refused:
            await page_calls("missing")  # linked to no UI: the Agent's alone
        assert refused.value.code is ErrorCode.TOOL_NOT_VISIBLE
        nursery.cancel_scope.cancel()


def test_lineup_run_says_which_ui_the_app_goes_without_and_why(
    data_dir: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    tmp_path_factory: pytest.TempPathFactory,
) -> None:
    """What `lineup run` says of the listing the test above checks (that listing, not a
    second one)."""
    monkeypatch.setattr(_run_cli, "_dev_mcp", partial(_listed, tmp_path_factory))
    args = argparse.Namespace(dev_mcp=SERVER, mcp_command=[sys.executable, "server.py"])
    entries = _dev_mcp_apps(args, data_dir)
    assert isinstance(entries, tuple) and entries[0]["app_scope"] == SCOPE
    said = capsys.readouterr().err.splitlines()
    assert sorted(said) == [
        f"lineup: --dev-mcp: no UI from ui://ours/{name} ({reason}); its tools stay"
        for name, reason in (
            ("huge", "ui_resource_too_big"),
            ("missing", "ui_resource_unreadable"),
            ("plain", "ui_resource_not_mcp_app"),
        )
    ]


async def test_the_pages_resources_read_of_its_servers_resource_is_the_servers_live_answer(
    data_dir: Path, tmp_path_factory: pytest.TempPathFactory
) -> None:
    """The page's `resources/read` of a URI that is not one of its UI documents (relayed as
    the hostbridge does: `focus.ui.surface.resource_read`) is the server's, read live through
    the app's process; an unknown one is `resource_not_found`, one over the bound
    `resource_too_large`, one the server answers too late `deadline_exceeded`, another
    instance's page gets nothing of it. Over ten seconds by design: the late answer is
    waited for until the app's own deadline (`UI_RESOURCE_READ_TIMEOUT_S`, 10 s)."""
    rt = data_dir / "rt"
    rt.mkdir(mode=0o700, parents=True)
    command = [sys.executable, "server.py"]
    entry = await trio.to_thread.run_sync(_listed, tmp_path_factory, SERVER, command, rt)
    async with trio.open_nursery() as nursery:
        runtime = await start_runtime(nursery, rt, extra_apps=(entry,), demo_agent=False)
        agent = AgentView(await agent_client(nursery, runtime.appserver_url), wait_s=40.0)
        revision = await agent.revision_with(f"{SCOPE}.show")
        await agent.client.call_tool(CONVERSATION, f"{SCOPE}.show", {"word": "hi"}, revision)
        await agent.pull(RESULT, lambda m: m["payload"]["result"] == {"result": "hi"})
        bridge = await attach(nursery, runtime.supervisor, ActorKind.HOSTBRIDGE, "hostbridge-t")
        views = await bridge.request("focus", ViewsRequest(), expect=ViewsReply)
        [page] = [v for v in views.views if v.app_scope == SCOPE and "surface_id" in v.view]

        async def page_reads(uri: str, instance_id: str = page.instance_id) -> Any:
            asked = SurfaceResourceReadRequest(
                instance_id=instance_id, surface_id=page.view["surface_id"], uri=uri
            )
            reply = await bridge.request("focus", asked, expect=SurfaceResourceReadReply)
            return reply.contents

        # Live: each read is the server's answer at that moment.
        [first] = await page_reads("data://ours/note")
        assert (first["uri"], first["mimeType"]) == ("data://ours/note", "text/plain")
        reads = int(first["text"].removeprefix("read ").removesuffix(" times"))
        [second] = await page_reads("data://ours/note")
        assert second["text"] == f"read {reads + 1} times"
        [dot] = await page_reads("data://ours/dot")
        assert base64.b64decode(dot["blob"]) == bytes(range(8))
        for uri, code in (
            ("data://ours/nothing", ErrorCode.RESOURCE_NOT_FOUND),
            ("data://ours/big", ErrorCode.RESOURCE_TOO_LARGE),
            ("data://ours/slow", ErrorCode.DEADLINE_EXCEEDED),  # the app's, at 10 s
        ):
            with pytest.raises(LineUpError) as refused:
                await page_reads(uri)
            assert refused.value.code is code
        # Another instance's (another app's) page: never its server's.
        with pytest.raises(LineUpError) as refused:
            await page_reads("data://ours/note", instance_id="inst-someone-else")
        assert refused.value.code is ErrorCode.APP_INSTANCE_NOT_FOUND
        nursery.cancel_scope.cancel()
