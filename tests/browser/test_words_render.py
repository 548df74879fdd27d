"""The Shell's words for codes, in real Chromium (issue 28, "user-facing words").

Every code a user can meet is shown as a sentence in the user's terms, the code kept in a
details line. The list of codes is generated from `ErrorCode` (plus the few words a call or a
question ends with), so a new code without a sentence in `core/words.js` fails here. The notice
test drives the real hostbridge actor with a fake bus whose focus refuses every `ui.open`
(tests/hostbridge/test_actor.py `RefusingOpens`).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Final

import trio
from playwright.sync_api import Page, expect

from lineup.actors.focus.messages import UiOpenRequest
from lineup.facts.errors import ErrorCode
from lineup.tests.hostbridge.test_actor import TOKEN, RefusingOpens, start_hostbridge

from .conftest import ShellPage

WAIT_MS: Final = 5_000
# What a call, a question or a capability ends with besides an ErrorCode: the router's stop
# codes (`app_closed`, `expired`) and the capability statuses that are not codes.
ENDINGS: Final = frozenset({"app_closed", "expired", "failed", "cancelled"})
SHOWN: Final = frozenset(code.value for code in ErrorCode) | ENDINGS
LOAD_WORDS: Final = (
    "async () => { const w = await import('/js/core/words.js'); return w.SENTENCES; }"
)
CODE_LIKE: Final = re.compile(r"[a-z]+_[a-z_]+")


async def test_every_code_the_shell_can_show_has_a_sentence_in_the_users_terms(
    nursery: trio.Nursery, tmp_path: Path, page: ShellPage
) -> None:
    _actor, _bus, port = await start_hostbridge(nursery, tmp_path)

    def sentences(p: Page) -> dict[str, str]:
        p.goto(f"http://127.0.0.1:{port}/#token={TOKEN}")
        found: dict[str, str] = p.evaluate(LOAD_WORDS)
        return found

    table = await page.run(sentences)
    assert sorted(SHOWN - table.keys()) == []  # a code without a sentence
    assert sorted(table.keys() - SHOWN) == []  # a sentence for a code nobody sends any more
    for code, sentence in table.items():
        assert sentence[:1].isupper() and sentence.endswith("."), code
        assert CODE_LIKE.search(sentence) is None, code  # words, never a code
        assert len(sentence) <= 100, code


async def test_a_refused_open_is_a_sentence_and_its_code_is_only_in_the_details_line(
    nursery: trio.Nursery, tmp_path: Path, page: ShellPage
) -> None:
    _actor, bus, port = await start_hostbridge(nursery, tmp_path, RefusingOpens())

    def refused(p: Page) -> tuple[str, str]:
        p.goto(f"http://127.0.0.1:{port}/#token={TOKEN}&open=whiteboard")
        notice = p.get_by_test_id("notice")
        expect(notice).to_have_count(1, timeout=WAIT_MS)
        expect(notice).to_have_attribute("data-level", "error")
        details = notice.get_by_test_id("code-details")
        expect(details).to_have_text("Details: app_disabled")
        text = notice.locator(".notice-text").inner_text()
        return text, details.inner_text()

    text, details = await page.run(refused)
    said = text.replace(details, "").strip()
    assert said == (
        "That app could not be opened. That app is turned off. Turn it on in the App Registry."
    )
    assert "app_disabled" not in said and "(" not in said
    assert [r for r in bus.requests if isinstance(r, UiOpenRequest)] == [
        UiOpenRequest(app_scope="whiteboard")
    ]


async def test_a_link_to_no_app_says_so_in_words_before_asking_the_runtime(
    nursery: trio.Nursery, tmp_path: Path, page: ShellPage
) -> None:
    _actor, bus, port = await start_hostbridge(nursery, tmp_path, RefusingOpens())

    def refused(p: Page) -> str:
        p.goto(f"http://127.0.0.1:{port}/#token={TOKEN}&open=Not%20an%20app")
        notice = p.get_by_test_id("notice")
        expect(notice).to_have_count(1, timeout=WAIT_MS)
        expect(notice.get_by_test_id("code-details")).to_have_text("Details: app_not_installed")
        return notice.locator(".notice-text").inner_text()

    text = await page.run(refused)
    assert text.startswith("That app could not be opened. That app is not installed.")
    assert [r for r in bus.requests if isinstance(r, UiOpenRequest)] == []
