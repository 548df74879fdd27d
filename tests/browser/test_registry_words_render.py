"""An ended app's group in the chat is named by the app's title, in real Chromium (issue 28,
item 9: the group said "Draw And Guess" where the tab and the launcher say "Draw and Guess").

The real hostbridge actor serves the real Shell, with a fake bus whose router lists two ended
sub-sessions (their instances gone) and whose focus offers Draw and Guess in the launcher: the
group of an app the launcher lists says its title; an app no longer offered keeps its id, never
a title made up from it.
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
from lineup.hostbridge.messages import AppSessionView, LaunchableApp
from lineup.tests.hostbridge.test_actor import TOKEN, FakeBus, start_hostbridge

from .conftest import ShellPage

WAIT_MS: Final = 5_000
CHAT_VIEW: Final = {"kind": "chat.timeline", "composer": {"enabled": True}}


def ended(scope: str, at: float) -> AppSessionView:
    return AppSessionView(
        app_session_id=f"lu:app_session:{scope}-1",
        app_scope=scope,
        instance_id=f"{scope}-1",
        state="closed",
        opened_at=at,
        closed_at=at + 10,
    )


class EndedGames(FakeBus):
    def __init__(self) -> None:
        super().__init__()
        now = time.time()
        sessions = (ended("draw-and-guess", now - 60), ended("old-game", now - 30))
        self.listed = InteractionsListReply(interactions=(), sessions=sessions)

    async def request(self, peer: str, body: Message, **kwargs: Any) -> Message:
        if isinstance(body, ViewsRequest):
            chat = AppView(app_scope="chat", instance_id="chat", view=CHAT_VIEW)
            chat_tab = {"instance_id": "chat", "app_scope": "chat", "state": "foreground"}
            live = ({**chat_tab, "title": "Chat"},)
            offered = (LaunchableApp(app_scope="draw-and-guess", title="Draw and Guess"),)
            return ViewsReply(views=(chat,), foreground="chat", instances=live, launchable=offered)
        return await super().request(peer, body, **kwargs)


async def test_an_ended_apps_group_says_its_title_not_one_made_from_its_id(
    nursery: trio.Nursery, tmp_path: Path, page: ShellPage
) -> None:
    _actor, _bus, port = await start_hostbridge(nursery, tmp_path, EndedGames())

    def titles(p: Page) -> None:
        p.goto(f"http://127.0.0.1:{port}/#token={TOKEN}")
        groups = p.get_by_test_id("app-session-group")
        expect(groups).to_have_count(2, timeout=WAIT_MS)
        expect(groups.get_by_test_id("app-session-title")).to_have_text(
            ["Draw and Guess", "old-game"]
        )

    await page.run(titles)
