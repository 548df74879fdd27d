"""Artifact cards in real Chromium (issue 13): in the instance's sub-session group, else at the
timeline's end; name, type, size, and Open / Download links that work and take the keyboard.

The real hostbridge actor serves the real Shell, with a fake bus (tests/hostbridge/
test_artifacts.py `ArtifactBus`) whose gateway has two artifacts of a whiteboard instance that
has a sub-session, and whose focus shows the chat in front.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any, Final

import trio
from playwright.sync_api import Page, expect

from lineup.actors.focus.messages import AppView, ViewsReply, ViewsRequest
from lineup.actors.kernel import Message
from lineup.actors.router.messages import InteractionsListReply
from lineup.hostbridge._artifacts import ticket
from lineup.hostbridge.messages import AppSessionView, ArtifactCreatedEvent
from lineup.tests.hostbridge.test_actor import TOKEN, from_peer, start_hostbridge
from lineup.tests.hostbridge.test_artifacts import BOARD, PNG, TEXT, ArtifactBus, info

from .conftest import ShellPage

WAIT_MS: Final = 5_000
CHAT_VIEW: Final = {"kind": "chat.timeline", "composer": {"enabled": True}}
SESSION: Final = AppSessionView(
    app_session_id="lu:app_session:whiteboard-1",
    app_scope="whiteboard",
    instance_id="whiteboard-1",
    state="open",
    opened_at=50.0,
)


class ChatBus(ArtifactBus):
    def __init__(self) -> None:
        super().__init__()
        self.listed = InteractionsListReply(interactions=(), sessions=(SESSION,))

    async def request(self, peer: str, body: Message, **kwargs: Any) -> Message:
        if isinstance(body, ViewsRequest):
            chat = AppView(app_scope="chat", instance_id="chat", view=CHAT_VIEW)
            live = (
                {
                    "instance_id": "chat",
                    "app_scope": "chat",
                    "state": "foreground",
                    "title": "Chat",
                },
                {
                    "instance_id": "whiteboard-1",
                    "app_scope": "whiteboard",
                    "state": "background",
                    "title": "Whiteboard",
                },
            )
            return ViewsReply(views=(chat,), foreground="chat", instances=live)
        return await super().request(peer, body, **kwargs)


async def test_artifact_cards_sit_in_their_group_or_at_the_end_and_open_and_download(
    nursery: trio.Nursery, tmp_path: Path, page: ShellPage
) -> None:
    actor, bus, port = await start_hostbridge(nursery, tmp_path, ChatBus())
    base = f"http://127.0.0.1:{port}"

    def grouped(p: Page) -> None:
        p.goto(f"{base}/#token={TOKEN}")
        group = p.get_by_test_id("app-session-group")
        expect(group).to_have_count(1, timeout=WAIT_MS)
        expect(p.get_by_test_id("timeline-artifact")).to_have_count(0)
        group.get_by_test_id("app-session-toggle").click()
        cards = group.get_by_test_id("artifact-card")
        expect(cards).to_have_count(2)
        expect(cards.first.get_by_test_id("artifact-name")).to_have_text("board.png")
        expect(cards.nth(1).get_by_test_id("artifact-name")).to_contain_text('notes "final"')
        expect(cards.first.get_by_test_id("artifact-meta")).to_have_text("PNG image · 32 B")
        expect(cards.nth(1).get_by_test_id("artifact-meta")).to_have_text("Text · 14 B")
        board = cards.first
        open_link = board.get_by_test_id("artifact-open")
        board_ticket = ticket(TOKEN, BOARD.artifact_id)
        expect(open_link).to_have_attribute(
            "href", f"/artifacts/{BOARD.artifact_id}?ticket={board_ticket}"
        )
        expect(open_link).to_have_attribute("rel", "noopener noreferrer")
        # Keyboard: Tab goes from Open to Download.
        open_link.focus()
        expect(open_link).to_be_focused()
        p.keyboard.press("Tab")
        expect(board.get_by_test_id("artifact-download")).to_be_focused()
        with p.expect_download() as downloaded:
            board.get_by_test_id("artifact-download").click()
        assert downloaded.value.suggested_filename == "board.png"
        assert Path(downloaded.value.path()).read_bytes() == PNG
        with p.context.expect_page() as opened:
            open_link.click()
        shown = opened.value
        shown.wait_for_load_state()
        assert shown.url == f"{base}/artifacts/{BOARD.artifact_id}?ticket={board_ticket}"
        shown.close()
        text = p.context.request.get(
            base + str(cards.nth(1).get_by_test_id("artifact-open").get_attribute("href"))
        )
        assert (text.status, text.body()) == (200, TEXT)
        assert "attachment" in text.headers["content-disposition"]
        # The token is in no card: only tickets.
        assert TOKEN not in p.get_by_test_id("timeline").inner_html()

    await page.run(grouped)
    made = info("art_" + "5" * 32, PNG, "image/png", "elsewhere.png", time.time())
    made = made.model_copy(update={"instance_id": "no-session-1"})
    bus.content[made.artifact_id] = (made, PNG)  # its card's thumbnail asks for it
    actor.on_artifact(*from_peer("gateway", ArtifactCreatedEvent(artifact=made)))

    def at_the_end(p: Page) -> None:
        rows = p.get_by_test_id("timeline").locator(":scope > li")
        expect(rows.last).to_have_attribute("data-testid", "timeline-artifact")
        expect(rows.last.get_by_test_id("artifact-name")).to_have_text("elsewhere.png")

    await page.run(at_the_end)
    assert not [a for a in bus.audits if a.event == "hostbridge.artifact_refused"]
