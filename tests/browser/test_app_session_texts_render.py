"""The Agent's short results in an app sub-session's folded group, in real Chromium against the
fake hostbridge (seed 000 §7.3: the group records the Agent's questions, the user's answers and
the Agent's short results): an Agent item naming a sub-session the Shell knows shows inside
that group, as safe Markdown, in the order it came among the group's cards, and not in the
main timeline; one naming a sub-session the Shell does not know stays in the timeline; the
app's own question never enters the group."""

from __future__ import annotations

import time

from playwright.sync_api import Page, expect

from lineup.tests.support.browser import open_shell

from ._fake_hostbridge import FakeHostbridge
from .conftest import ShellPage
from .test_interactions_render import (
    CONFIRM,
    SESSION,
    TASK,
    apps,
    card,
    interaction,
    interactions,
    session,
    task_view,
)
from .test_shell_render import chat_view, item_frames, message


def result(message_id: str, markdown: str, at: float, app_session_id: str) -> dict[str, object]:
    return {
        **message(message_id, "agent", "received", markdown),
        "at": at,
        "app_session_id": app_session_id,
    }


async def test_a_short_result_shows_in_its_group_in_order_and_an_unknown_ones_in_the_timeline(
    page: ShellPage, hostbridge: FakeHostbridge
) -> None:
    now = time.time()
    connection = await open_shell(
        page,
        hostbridge,
        apps("inst-chat-1"),
        chat_view(
            message("m1", "agent", "received", "Hello"),
            result("r1", "Set to **60 %** <script>x()</script>", now - 20, SESSION),
            result("r9", "Of a group this Shell never heard of", now - 10, "lu:app_session:gone"),
        ),
        task_view(),
        session(),
        interactions(
            interaction(
                "k1",
                CONFIRM,
                "completed",
                result={"approved": True},
                app_session_id=SESSION,
                created_at=now - 30,
            ),
            interaction(
                "k2", {**CONFIRM, "title": "Later"}, app_session_id=SESSION, created_at=now - 5
            ),
            # The app's own question (sdk.ui.request): its container's, never the group's.
            interaction(
                "own",
                {**CONFIRM, "title": "Mine"},
                source="miniapp",
                owner_scope="task-dashboard",
                instance_id=TASK,
                created_at=now - 15,
            ),
        ),
    )

    def grouped(p: Page) -> None:
        timeline = p.get_by_test_id("timeline")
        group = p.get_by_test_id("app-session-group")
        expect(group).to_have_count(1)
        # Folded, it says it holds a result; the main timeline shows none of the group's.
        expect(group.get_by_test_id("app-session-count")).to_have_text(" · 1 result")
        expect(group.get_by_test_id("app-session-text")).to_be_hidden()
        expect(timeline.get_by_test_id("message")).to_have_count(2)  # Hello, and the unknown's
        expect(timeline.get_by_test_id("message-body")).to_have_text(
            ["Hello", "Of a group this Shell never heard of"]
        )
        group.get_by_test_id("app-session-toggle").click()
        text = group.get_by_test_id("app-session-text")
        expect(text).to_have_count(1)
        expect(text).to_have_attribute("data-message-id", "r1")
        body = text.get_by_test_id("app-session-text-body")
        expect(body).to_have_text("Set to 60 % <script>x()</script>")  # markup is text
        expect(body.locator("strong")).to_have_text("60 %")
        expect(body.locator("script")).to_have_count(0)
        # In the order they came: the answered card, the result, the later question.
        kinds = group.locator('[data-testid="interaction-card"], [data-testid="app-session-text"]')
        expect(kinds).to_have_count(3)
        order = kinds.evaluate_all(
            "els => els.map(e => e.getAttribute('data-interaction-id') || e.dataset.messageId)"
        )
        assert order == ["k1", "r1", "k2"]
        expect(card(p, "own", "group")).to_have_count(0)
        expect(card(p, "own", "timeline")).to_have_count(0)
        assert p.evaluate("window.__cspViolations") == []

    await page.run(grouped)

    # Once the Shell hears of that sub-session, its result moves into its group.
    other = session()["sessions"][0] | {
        "app_session_id": "lu:app_session:gone",
        "instance_id": "task-dashboard:gone",
        "state": "closed",
        "closed_at": now,
    }
    await connection.send({"type": "shell.app_sessions", "sessions": [other]})
    await connection.send(item_frames(result("r10", "One more", now, SESSION), first=10)[0])

    def moved(p: Page) -> None:
        timeline = p.get_by_test_id("timeline")
        expect(timeline.get_by_test_id("message-body")).to_have_text(["Hello"])
        groups = p.get_by_test_id("app-session-group")
        expect(groups).to_have_count(2)
        ended = p.locator(
            '[data-testid="app-session-group"][data-app-session-id="lu:app_session:gone"]'
        )
        expect(ended.get_by_test_id("app-session-count")).to_have_text(" · 1 result")
        mine = p.locator(f'[data-testid="app-session-group"][data-app-session-id="{SESSION}"]')
        expect(mine.get_by_test_id("app-session-count")).to_have_text(" · 2 results")
        expect(mine.get_by_test_id("app-session-text-body")).to_have_text(
            ["Set to 60 % <script>x()</script>", "One more"]
        )

    await page.run(moved)
