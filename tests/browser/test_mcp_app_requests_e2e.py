"""An MCP App's requests the runtime serves (issue 30), from the published "Get Time" page,
unchanged, in real Chromium on a real runtime (as test_mcp_app_host_e2e.py sets it up):
`resources/list|read` of its own app's UI documents (another's is `-32002`),
`ui/update-model-context` reaching the Agent as the app's context in its sub-session (never as
the user's words), `ui/download-file` saved as an artifact after the runtime's own prompt, the
user's no answered `{isError: true}`. The requests are made as any page's script would."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Final

import trio
from playwright.sync_api import Page, expect

from lineup import wire

from .conftest import ShellPage
from .test_mcp_app_host_e2e import ASK, WAIT_MS, app, host_said, published_page, time_shown

SECRET: Final = "CONTEXT-TEXT-8841"
FILE_TEXT: Final = "a,b\n1,2\n"


def ask(p: Page, request_id: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
    """The page's request, and the Shell's answer to it (waited for)."""
    frame = app(p)
    frame.evaluate(ASK, [request_id, method, params])
    frame.wait_for_function(
        "(id) => window.__hostSaid.some((m) => m.id === id)", arg=request_id, timeout=WAIT_MS
    )
    return next(m for m in host_said(p) if m.get("id") == request_id)


async def test_the_page_lists_and_reads_its_own_apps_ui_and_nothing_else(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage
) -> None:
    await time_shown(nursery, data_dir, page)

    def resources(p: Page) -> None:
        # As an MCP client sends a list with no params: none at all.
        app(p).evaluate(
            """() => window.parent.postMessage(
                 { jsonrpc: "2.0", id: "t-bare", method: "resources/list" }, "*")"""
        )
        app(p).wait_for_function("() => window.__hostSaid.some((m) => m.id === 't-bare')")
        bare = next(m for m in host_said(p) if m.get("id") == "t-bare")
        listed = ask(p, "t-list", "resources/list", {})["result"]["resources"]
        assert bare["result"]["resources"] == listed
        assert listed == [
            {"uri": "ui://gettime/ui", "name": "ui", "mimeType": "text/html;profile=mcp-app"}
        ]
        read = ask(p, "t-read", "resources/read", {"uri": "ui://gettime/ui"})["result"]
        [content] = read["contents"]
        assert (content["uri"], content["mimeType"]) == (
            "ui://gettime/ui",
            "text/html;profile=mcp-app",
        )
        assert content["text"].encode() == published_page()  # byte for byte, as shipped
        for n, uri in enumerate(("ui://chat/ui", "ui://gettime/other", "file:///etc/passwd")):
            refused = ask(p, f"t-no-{n}", "resources/read", {"uri": uri})["error"]
            assert (refused["code"], refused["data"]["code"]) == (-32002, "resource_not_found")

    await page.run(resources)


async def test_the_apps_context_reaches_the_agent_in_its_sub_session_not_as_user_text(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage
) -> None:
    _, agent = await time_shown(nursery, data_dir, page)
    opened = await agent.pull(
        wire.APP_SESSION_OPENED, lambda m: m["payload"]["app_scope"] == "gettime"
    )
    context = {"content": [{"type": "text", "text": SECRET}], "structuredContent": {"tz": "UTC"}}
    answer = await page.run(lambda p: ask(p, "t-ctx", "ui/update-model-context", context))
    assert answer["result"] == {}
    told = await agent.pull(wire.APP_SESSION_CONTEXT)
    payload = told["payload"]
    assert payload["app_session_id"] == opened["payload"]["app_session_id"]
    assert (payload["app_scope"], payload["content"], payload["structured_content"]) == (
        "gettime",
        [{"type": "text", "text": SECRET}],
        {"tz": "UTC"},
    )
    newer = {"content": [{"type": "text", "text": "later"}]}
    assert (await page.run(lambda p: ask(p, "t-ctx2", "ui/update-model-context", newer)))[
        "result"
    ] == {}
    later = await agent.pull(
        wire.APP_SESSION_CONTEXT, lambda m: m["payload"]["content"][0]["text"] == "later"
    )
    assert later["payload"]["revision"] > payload["revision"]  # it replaces the first
    await agent.settle()
    assert not [m for m in agent.seen if m["type"] == wire.TEXT and SECRET in str(m)]
    big = {"content": [{"type": "text", "text": "x" * 20_000}]}
    refused = await page.run(lambda p: ask(p, "t-big", "ui/update-model-context", big))
    assert refused["error"]["data"]["code"] == "model_context_too_large"


async def test_a_file_the_page_offers_is_saved_after_the_runtimes_prompt_or_declined(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage
) -> None:
    await time_shown(nursery, data_dir, page)
    offered = {
        "contents": [
            {
                "type": "resource",
                "resource": {"uri": "file:///times.csv", "mimeType": "text/csv", "text": FILE_TEXT},
            }
        ]
    }

    def save_then_decline(p: Page) -> tuple[bytes, str]:
        frame = app(p)
        dialog = p.get_by_test_id("permission-prompt")
        with p.expect_download(timeout=WAIT_MS) as downloading:
            frame.evaluate(ASK, ["t-save", "ui/download-file", offered])
            expect(dialog).to_be_visible(timeout=WAIT_MS)
            expect(p.get_by_test_id("permission-heading")).to_contain_text("Get Time")
            expect(p.get_by_test_id("permission-purpose")).to_contain_text(
                "Save times.csv, a file from this app, as a download"
            )
            p.get_by_test_id("permission-allow-once").click(timeout=WAIT_MS)
        download = downloading.value
        saved = data_dir / "saved.csv"
        download.save_as(saved)
        frame.wait_for_function(
            "() => window.__hostSaid.some((m) => m.id === 't-save')", timeout=WAIT_MS
        )
        assert next(m for m in host_said(p) if m.get("id") == "t-save")["result"] == {}

        frame.evaluate(ASK, ["t-no", "ui/download-file", offered])
        expect(dialog).to_be_visible(timeout=WAIT_MS)
        p.get_by_test_id("permission-deny").click(timeout=WAIT_MS)
        frame.wait_for_function(
            "() => window.__hostSaid.some((m) => m.id === 't-no')", timeout=WAIT_MS
        )
        assert next(m for m in host_said(p) if m.get("id") == "t-no")["result"] == {"isError": True}
        return saved.read_bytes(), download.suggested_filename

    content, name = await page.run(save_then_decline)
    assert content == FILE_TEXT.encode()
    assert name == "times.csv"
