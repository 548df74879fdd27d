"""A Surface told that the runtime is unreachable, in real Chromium against a real `lineup run`
(issue 28: while the runtime is unreachable, nothing in the Shell accepts work it cannot keep).

The user opens the Whiteboard and draws; then the runtime's Shell server stops answering (its
hostbridge process SIGSTOPped: the socket stays open and silent, as with a frozen or unplugged
runtime, and the Shell gives it up after its watchdog). The board is told by its bridge
(`lineup/notifications/connection`) and says it is offline before the user does anything; a
request it made on the dying socket is answered `runtime_unreachable` as soon as the Shell
gives the socket up (not after a timeout), and one made while offline at once; Submit and
Export wait. A stroke drawn meanwhile stays on the board, pending. The hostbridge goes on
(SIGCONT), or is killed and started again by the supervisor, the Shell reconnects by itself,
the board is told it is back and saves the stroke: a new revision holds both strokes, also
after a reload. Browser waits are Playwright's
auto-waiting `expect`; waits on processes run under `fail_after`. No sleeps.
"""

from __future__ import annotations

import contextlib
import os
import signal
from collections.abc import Callable
from pathlib import Path
from typing import Final

import pytest
import trio
from playwright.sync_api import Page, expect

from lineup.tests.support.browser import load_shell
from lineup.tests.support.process import lineup_status, wait_pid_gone

from .conftest import ShellPage
from .test_runtime_restart_e2e import open_the_whiteboard_by_keyboard, start_run, stop_run
from .test_whiteboard_e2e import (
    board_body,
    board_frame,
    board_pixel,
    draw,
    expect_saved,
    revision_of,
)

WAIT_MS: Final = 15_000  # a real runtime: processes, an HTTP AppServer, a MiniApp starting
# The Shell gives a silent socket up after 4 s (core/connection.js SILENCE_MS), so a request
# made on it has its answer within that; the bridge's own timeouts are 10 s (the SDK) and 15 s.
GIVEN_UP_MS: Final = 6_000
FIRST: Final = [(100 + 10 * i, 200 + 3 * i) for i in range(40)]
OFFLINE_STROKE: Final = [(1200 + 5 * i, 600 + 5 * i) for i in range(30)]
BLANK: Final = (1300, 100)  # a point no stroke crosses
OFFLINE_TEXT: Final = (
    "Offline: LineUp cannot be reached. What you draw is saved once it is back "
    "(not if LineUp restarts meanwhile)."
)
# In the board's frame: a read of its session data, its outcome (a code, or "answered") kept on
# the body for `expect` to wait on, and how long the answer took.
ASK: Final = """
(mark) => {
  const asked = performance.now();
  window.LineUpBridge.request("lineup/session-data/get", {}).then(
    () => "answered",
    (err) => err.code,
  ).then((outcome) => {
    document.body.dataset[mark] = outcome;
    document.body.dataset[mark + "Ms"] = String(Math.round(performance.now() - asked));
  });
}
"""


def hostbridge_pid(data_dir: Path) -> int:
    children = lineup_status(data_dir)["children"]
    assert isinstance(children, list)
    (pid,) = [c["pid"] for c in children if c["name"] == "hostbridge"]
    assert isinstance(pid, int)
    return pid


def ask(mark: str) -> Callable[[Page], None]:
    def run(p: Page) -> None:
        board_frame(p).evaluate(ASK, mark)

    return run


def told_offline_before_anything_is_drawn(p: Page) -> None:
    expect(p.get_by_test_id("runtime-state")).to_have_attribute(
        "data-state", "disconnected", timeout=GIVEN_UP_MS
    )
    body = board_body(p)
    expect(body).to_have_attribute("data-link", "offline", timeout=WAIT_MS)
    expect(body.locator("#board-status")).to_have_text(OFFLINE_TEXT)
    # What waits on the runtime cannot be done now: it waits, visibly.
    expect(body.locator("#submit")).to_be_disabled()
    expect(body.locator("#export")).to_be_disabled()
    # The request made on the socket that went silent: answered as the Shell gave it up.
    expect(body).to_have_attribute("data-on-the-dying-socket", "runtime_unreachable")


def drawn_offline_stays_pending(p: Page) -> None:
    draw(OFFLINE_STROKE)(p)
    body = board_body(p)
    expect(body).to_have_attribute("data-items", "2")
    expect(body).to_have_attribute("data-pending", "1")
    expect(body.locator("#board-status")).to_have_text(OFFLINE_TEXT)
    # A request made while offline is answered at once, with the code that says why.
    ask("whileOffline")(p)
    expect(body).to_have_attribute("data-while-offline", "runtime_unreachable")
    waited = body.get_attribute("data-while-offline-ms")
    assert waited is not None and int(waited) < 1000, waited


def back_and_saved(p: Page) -> None:
    expect(p.get_by_test_id("runtime-state")).to_have_attribute(
        "data-state", "online", timeout=WAIT_MS
    )
    body = board_body(p)
    expect(body).to_have_attribute("data-link", "online", timeout=WAIT_MS)
    expect_saved(p, 2)
    expect(body.locator("#board-status")).to_have_text("Saved.", timeout=WAIT_MS)
    expect(body.locator("#submit")).to_be_enabled()
    expect(body.locator("#export")).to_be_enabled()


def both_strokes_after_a_reload(p: Page) -> None:
    p.reload()
    expect(p.get_by_test_id("runtime-state")).to_have_attribute(
        "data-state", "online", timeout=WAIT_MS
    )
    board_frame(p)
    expect_saved(p, 2)
    blank = board_pixel(p, *BLANK)
    assert board_pixel(p, 200, 230) != blank  # the first stroke
    assert board_pixel(p, 1270, 670) != blank  # the one drawn offline


@pytest.mark.timeout(120)
@pytest.mark.parametrize("how", ["resumed", "killed"])
async def test_a_whiteboard_is_told_the_runtime_is_unreachable_and_saves_its_stroke_once_back(
    page: ShellPage, data_dir: Path, how: str
) -> None:
    """`resumed`: the stopped hostbridge goes on (SIGCONT). `killed`: it is SIGKILLed while
    stopped and the supervisor starts another on the same address, which knows nothing of the
    board's subscription to its session data: the Shell renews it once connected again.
    About ten seconds by design: the Shell gives a silent hostbridge up only after its own
    4 s (`SILENCE_MS`), and reconnects on its backoff."""
    process, url = await start_run(data_dir, "--no-demo-agent")
    try:
        await page.run(load_shell(url, wait_ms=WAIT_MS))
        await page.run(open_the_whiteboard_by_keyboard)
        await page.run(draw(FIRST))
        await page.run(lambda p: expect_saved(p, 1))
        drawn: int = await page.run(revision_of)
        await page.run(lambda p: expect(board_body(p)).to_have_attribute("data-link", "online"))

        pid = hostbridge_pid(data_dir)
        os.kill(pid, signal.SIGSTOP)
        try:
            await page.run(ask("onTheDyingSocket"))
            await page.run(told_offline_before_anything_is_drawn)
            await page.run(drawn_offline_stays_pending)
            if how == "killed":
                os.kill(pid, signal.SIGKILL)
                with trio.fail_after(WAIT_MS / 1000):
                    await wait_pid_gone(pid)
        finally:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGCONT)

        await page.run(back_and_saved)
        assert await page.run(revision_of) > drawn
        assert (hostbridge_pid(data_dir) == pid) == (how == "resumed")
        await page.run(both_strokes_after_a_reload)
    finally:
        await stop_run(process, "sigterm")
    assert page.errors == []
