"""The Whiteboard in real Chromium against the real runtime: its Surface, its board, its end.

The Agent (an `AgentClient` on the embedded AppServer) opens a board; the user draws in the
Surface's iframe (synthetic pointer events dispatched in that frame); the strokes reach the
app as batched patches and come back as session data revisions. A reload of the Shell brings
the board back; an old revision written from the Surface is refused; a SIGKILL of the
whiteboard's process while a stroke is being drawn loses nothing. The Submit button asks the
user to confirm in the Shell; the approval makes the PNG, the Agent's open call completes with
its artifact id and the metadata of the PNG and the JSON (the bytes the user downloads from
their cards), and the instance closes: the chat is back with the sub-session folded. A runtime
stopped and started again on the same data brings the board back once the user resumes its
suspended tab, and so does a reload of the frame's document alone.
Browser waits are Playwright's auto-waiting `expect`; waits on the AppServer run under
`fail_after`. No sleeps.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import trio
from playwright.sync_api import Frame, Locator, Page, expect

from lineup.tests.support.agent_view import FINALS, AgentView
from lineup.tests.support.browser import greeted_in_the_shell, ready_frame
from lineup.tests.support.runtime import (
    CONVERSATION,
    agent_client,
    kill_and_wait_restarted,
    start_runtime,
)

from .conftest import ShellPage

WAIT_MS: Final = 15_000  # a real runtime: processes, an HTTP AppServer, a long-polling Agent
WAIT_S: Final = WAIT_MS / 1000
GREETING: Final = "Draw it for me"
TITLE: Final = "Kitchen plan"
RESULT: Final = "lineup.v1.tool.result"
APP: Final = "miniapp:whiteboard"
FRAME: Final = '[data-testid="surface-frame"]'

# Dispatches a stroke's pointer events on the board's canvas, in board coordinates; leaves the
# pointer down unless `up` (a stroke still being drawn).
DRAW: Final = """
({points, up}) => {
  const canvas = document.getElementById("canvas");
  const box = canvas.getBoundingClientRect();
  const at = ([x, y]) => ({
    clientX: box.left + (x / 1600) * box.width,
    clientY: box.top + (y / 1000) * box.height,
    pointerId: 7, pointerType: "mouse", isPrimary: true, button: 0, buttons: 1,
    bubbles: true, cancelable: true,
  });
  if (points.length) {
    canvas.dispatchEvent(new PointerEvent("pointerdown", at(points[0])));
    for (const point of points.slice(1)) {
      canvas.dispatchEvent(new PointerEvent("pointermove", at(point)));
    }
  }
  const last = points[points.length - 1] || [0, 0];
  if (up) canvas.dispatchEvent(new PointerEvent("pointerup", at(last)));
}
"""
STALE_REPLACE: Final = """
async () => {
  try {
    await window.LineUpBridge.request(
      "lineup/session-data/replace", {data: {board: null}, expected_revision: 1});
    return "written";
  } catch (err) {
    return err.code;
  }
}
"""


def tabs(p: Page) -> Locator:
    return p.get_by_test_id("app-switcher").get_by_test_id("app-tab")


def card(p: Page, place: str) -> Locator:
    return p.locator(f'[data-testid="interaction-card"][data-place="{place}"]')


def board_frame(p: Page) -> Frame:
    """The Surface's frame once its board is connected (handshake and subscription done)."""
    expect(p.locator(FRAME)).to_have_count(1, timeout=WAIT_MS)
    return ready_frame(p, ready='body[data-state="ready"]', wait_ms=WAIT_MS)


def board_body(p: Page) -> Locator:
    return p.frame_locator(FRAME).locator("body")


def expect_saved(p: Page, items: int) -> None:
    """The board shows `items` and nothing is left unacknowledged by a revision."""
    body = board_body(p)
    expect(body).to_have_attribute("data-items", str(items), timeout=WAIT_MS)
    expect(body).to_have_attribute("data-pending", "0", timeout=WAIT_MS)


def draw(points: list[tuple[int, int]], *, up: bool = True) -> Callable[[Page], None]:
    def run(p: Page) -> None:
        board_frame(p).evaluate(DRAW, {"points": [list(pt) for pt in points], "up": up})

    return run


def revision_of(p: Page) -> int:
    value = board_body(p).get_attribute("data-revision", timeout=WAIT_MS)
    assert value is not None
    return int(value)


def in_front(p: Page) -> None:
    board_frame(p)
    expect(p.get_by_test_id("chat")).to_be_hidden(timeout=WAIT_MS)
    # The tab is the instance's (the app's title); the board's title is in the Surface.
    expect(tabs(p)).to_have_text(["Chat", "Whiteboard"], timeout=WAIT_MS)
    expect(board_body(p).locator("#board-title")).to_have_text(TITLE, timeout=WAIT_MS)


async def open_board(
    agent: AgentView, revision: str, page: ShellPage, board_id: str = "kitchen"
) -> None:
    """The Agent opens a board (call `open-1`, which runs until the board ends); the Shell shows
    it in front."""
    with trio.fail_after(WAIT_S):
        await agent.client.call_tool(
            CONVERSATION,
            "whiteboard.open",
            {"board_id": board_id, "title": TITLE},
            revision,
            call_id="open-1",
        )
    await page.run(in_front)


async def draw_a_stroke(page: ShellPage) -> int:
    """The user draws a stroke and sees it saved; answers the revision it was saved at."""
    await page.run(draw([(100 + 10 * i, 200 + 3 * i) for i in range(40)]))
    await page.run(lambda p: expect_saved(p, 1))
    drawn: int = await page.run(revision_of)
    return drawn


def reload_restores(p: Page) -> None:
    p.reload()
    expect(p.get_by_test_id("runtime-state")).to_have_attribute(
        "data-state", "online", timeout=WAIT_MS
    )
    board_frame(p)
    expect_saved(p, 1)


def submit_and_approve(p: Page) -> None:
    board_body(p).locator("#submit").click(timeout=WAIT_MS)
    asked = card(p, "app")
    expect(asked.get_by_test_id("interaction-approve")).to_have_text("Submit", timeout=WAIT_MS)
    asked.get_by_test_id("interaction-approve").click(timeout=WAIT_MS)


def told_as_stored(shell_url: str, result: dict[str, Any]) -> Callable[[Page], None]:
    """The Agent's result names the PNG and the JSON with their metadata, and each is what the
    user gets from its card in the sub-session's group: the same name, type, size and SHA-256
    as the bytes served."""

    def check(p: Page) -> None:
        told = result["artifacts"]
        assert [a["media_type"] for a in told] == ["image/png", "application/json"]
        assert [a["name"] for a in told] == [
            f"{TITLE} - submitted.png",
            f"{TITLE} - submitted.json",
        ]
        assert told[0]["artifact_id"] == result["artifact_id"]
        base = shell_url.split("/#", maxsplit=1)[0]
        for meta in told:
            card = p.locator(
                f'[data-testid="artifact-card"][data-artifact-id="{meta["artifact_id"]}"]'
            )
            expect(card).to_have_count(1, timeout=WAIT_MS)
            href = card.get_by_test_id("artifact-open").get_attribute("href", timeout=WAIT_MS)
            assert href is not None
            served = p.context.request.get(base + href)
            body = served.body()
            assert served.status == 200
            assert served.headers["content-type"].split(";")[0] == meta["media_type"]
            disposition = served.headers["content-disposition"]
            assert disposition.endswith(f'; filename="{meta["name"]}"'), disposition
            assert (len(body), hashlib.sha256(body).hexdigest()) == (meta["size"], meta["sha256"])
        assert told[0]["size"] > 0 and told[1]["size"] > 0

    return check


def chat_back_with_the_sub_session_folded(p: Page) -> None:
    expect(p.get_by_test_id("chat")).to_be_visible(timeout=WAIT_MS)
    expect(p.get_by_test_id("composer")).to_be_visible(timeout=WAIT_MS)
    expect(p.locator(FRAME)).to_have_count(0, timeout=WAIT_MS)
    expect(tabs(p)).to_have_count(1, timeout=WAIT_MS)
    group = p.get_by_test_id("app-session-group")
    expect(group).to_have_count(1, timeout=WAIT_MS)
    expect(group).to_have_attribute("data-state", "closed", timeout=WAIT_MS)
    expect(group.get_by_test_id("app-session-toggle")).to_have_attribute(
        "aria-expanded", "false", timeout=WAIT_MS
    )
    expect(p.get_by_test_id("message-body").first).to_have_text(GREETING, timeout=WAIT_MS)
    assert p.evaluate("window.__cspViolations") == []


async def test_the_user_draws_a_board_that_survives_reload_and_a_crash_and_submits_it(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage
) -> None:
    runtime, agent, revision = await greeted_in_the_shell(
        nursery, data_dir, page, GREETING, wait_ms=WAIT_MS
    )
    await open_board(agent, revision, page)

    # Draw: the stroke is drawn in the frame at once and acknowledged by a revision.
    drawn = await draw_a_stroke(page)
    assert drawn >= 2  # the open wrote the empty board, a patch the stroke

    # A reload of the Shell mounts the Surface again on the board as it was.
    await page.run(reload_restores)

    # An old revision written from the Surface never overwrites the newer board.
    code: Any = await page.run(lambda p: board_frame(p).evaluate(STALE_REPLACE))
    assert code == "stale_revision"
    await page.run(lambda p: expect_saved(p, 1))

    # SIGKILL of the whiteboard's process mid-stroke: the stroke is sent once the pointer is
    # up, re-sent until the new process has applied it; the first stroke is still there.
    await page.run(draw([(400, 500), (420, 520), (440, 540)], up=False))
    await kill_and_wait_restarted(runtime, APP)
    await page.run(draw([], up=True))
    await page.run(lambda p: expect_saved(p, 2))

    # Submit from the Surface: the user confirms in the Shell; the Agent gets the PNG's id.
    await page.run(submit_and_approve)
    opened = await agent.terminal("open-1")
    await page.run(chat_back_with_the_sub_session_folded)

    await agent.settle()
    finals = agent.of_call("open-1", *FINALS)
    assert [m["type"] for m in finals] == [RESULT]
    result = opened["payload"]["result"]
    assert result["status"] == "completed"
    assert str(result["artifact_id"]).startswith("art_")
    await page.run(told_as_stored(runtime.shell_url, result))
    assert page.off_loopback() == [], "a request left 127.0.0.1"
    assert page.errors == []


def keyboard_text_box_then_undo(p: Page) -> None:
    body = board_body(p)
    body.locator("#canvas").focus()
    p.keyboard.press("e")
    expect(body.locator('[data-tool="erase"]')).to_have_attribute("aria-pressed", "true")
    p.keyboard.press("p")
    expect(body.locator('[data-tool="pen"]')).to_have_attribute("aria-pressed", "true")
    p.keyboard.press("t")
    expect(body.locator("#text-input")).to_be_focused()
    p.keyboard.type("fridge here")
    p.keyboard.press("Enter")
    expect_saved(p, 1)
    body.locator("#canvas").focus()
    p.keyboard.press("Control+z")
    expect_saved(p, 0)
    p.keyboard.press("t")
    p.keyboard.type("sink")
    p.keyboard.press("Enter")
    expect_saved(p, 1)
    # Every control is a button or a field the Tab key reaches, named for assistive tools.
    for control in body.locator("button").all():
        assert control.get_attribute("aria-label"), control
        assert control.get_attribute("tabindex") in (None, "0")


def keep_drawing(p: Page) -> None:
    asked = card(p, "app")
    expect(asked.get_by_test_id("interaction-cancel")).to_have_text("Keep drawing", timeout=WAIT_MS)
    asked.get_by_test_id("interaction-cancel").click(timeout=WAIT_MS)
    expect(board_body(p)).to_have_attribute("data-phase", "drawing", timeout=WAIT_MS)
    expect_saved(p, 1)


async def test_the_board_is_usable_by_keyboard_and_a_declined_agent_submit_keeps_it(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage
) -> None:
    _, agent, revision = await greeted_in_the_shell(
        nursery, data_dir, page, GREETING, wait_ms=WAIT_MS
    )
    await open_board(agent, revision, page)
    await page.run(keyboard_text_box_then_undo)

    # The Agent submits; the user keeps drawing: the call fails, the board stays open.
    with trio.fail_after(WAIT_S):
        await agent.client.call_tool(
            CONVERSATION, "whiteboard.submit", {"board_id": "kitchen"}, revision, call_id="sub-1"
        )
    await page.run(keep_drawing)
    declined = await agent.terminal("sub-1")
    assert (declined["type"], declined["payload"]["code"]) == (
        "lineup.v1.tool.error",
        "cancelled_by_user",
    )
    await page.run(in_front)
    await agent.settle()
    assert agent.of_call("open-1", *FINALS) == []  # the open call still runs
    assert page.errors == []


def whiteboard_tab(p: Page) -> Locator:
    return tabs(p).and_(p.locator('[data-app-scope="whiteboard"]'))


async def first_run_with_one_stroke(data_dir: Path, page: ShellPage) -> int:
    """One `lineup run`: the Agent opens a board, the user draws a stroke and sees it saved;
    then the runtime is stopped. Answers the revision the stroke was saved at."""
    async with trio.open_nursery() as run:
        _, agent, revision = await greeted_in_the_shell(
            run, data_dir, page, GREETING, wait_ms=WAIT_MS
        )
        await open_board(agent, revision, page)
        drawn = await draw_a_stroke(page)
        run.cancel_scope.cancel()
    return drawn


def suspended_after_restart(url: str, page: ShellPage) -> Callable[[Page], None]:
    def load(p: Page) -> None:
        p.goto(url)
        page.console_errors.clear()  # the old page's reconnects to the stopped runtime
        expect(p.get_by_test_id("runtime-state")).to_have_attribute(
            "data-state", "online", timeout=WAIT_MS
        )
        expect(tabs(p)).to_have_count(2, timeout=WAIT_MS)
        expect(whiteboard_tab(p)).to_have_attribute("data-state", "suspended", timeout=WAIT_MS)
        expect(p.get_by_test_id("chat")).to_be_visible(timeout=WAIT_MS)
        expect(p.locator(FRAME)).to_have_count(0, timeout=WAIT_MS)

    return load


def resume_by_its_tab(p: Page) -> None:
    whiteboard_tab(p).press("Enter")  # a keyboard user; a click does the same
    expect(whiteboard_tab(p)).to_have_attribute("data-state", "foreground", timeout=WAIT_MS)
    in_front(p)


def board_pixel(p: Page, x: int, y: int) -> list[int]:
    """The canvas's RGBA at board point (x, y), read inside the frame."""
    value: list[int] = board_frame(p).evaluate(
        """([x, y]) => {
          const canvas = document.getElementById("canvas");
          const px = Math.round((x / 1600) * canvas.width);
          const py = Math.round((y / 1000) * canvas.height);
          return Array.from(canvas.getContext("2d").getImageData(px, py, 1, 1).data);
        }""",
        [x, y],
    )
    return value


def reload_only_the_frame(p: Page) -> None:
    """The frame's own document reloads (the Shell stays as it is): a new handshake, a new
    subscription, the board drawn again from session data."""
    frame = board_frame(p)
    frame.evaluate("() => { window.__beforeReload = true; location.reload(); }")
    expect(board_body(p)).to_have_attribute("data-state", "ready", timeout=WAIT_MS)
    handle = p.locator(FRAME).element_handle(timeout=WAIT_MS)
    reloaded = handle.content_frame()
    assert reloaded is not None
    reloaded.wait_for_function("() => window.__beforeReload === undefined", timeout=WAIT_MS)
    reloaded.wait_for_selector('body[data-state="ready"]', timeout=WAIT_MS)
    expect_saved(p, 1)


async def test_the_board_survives_a_runtime_restart_and_a_reload_of_its_frame(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage
) -> None:
    drawn = await first_run_with_one_stroke(data_dir, page)

    # The runtime started again on the same data: the board's tab says it is suspended and no
    # process runs for it; the user brings it to the front, which resumes the instance.
    runtime = await start_runtime(nursery, data_dir, demo_agent=False)
    await page.run(suspended_after_restart(runtime.shell_url, page))
    assert APP not in runtime.supervisor.children
    await page.run(resume_by_its_tab)
    assert runtime.supervisor.children[APP].state == "running"

    # A new document with nothing pending of its own: the stroke is the session data's, at
    # the revision it was saved at, and it is on the canvas.
    await page.run(lambda p: expect_saved(p, 1))
    assert await page.run(revision_of) >= drawn
    stroke_at: list[int] = await page.run(lambda p: board_pixel(p, 200, 230))
    blank_at: list[int] = await page.run(lambda p: board_pixel(p, 1200, 800))
    assert stroke_at != blank_at, (stroke_at, blank_at)

    # Reloading just the frame's document brings the board back as well.
    await page.run(reload_only_the_frame)
    assert await page.run(lambda p: board_pixel(p, 200, 230)) == stroke_at

    # Live again: a new stroke is saved, and the Agent's open call (from before the restart)
    # completes on submit with the PNG and the JSON and their metadata.
    await page.run(draw([(700, 300), (760, 360), (820, 420)]))
    await page.run(lambda p: expect_saved(p, 2))
    agent = AgentView(await agent_client(nursery, runtime.appserver_url), wait_s=WAIT_S)
    await page.run(submit_and_approve)
    opened = await agent.terminal("open-1")
    assert opened["type"] == RESULT
    result = opened["payload"]["result"]
    assert result["status"] == "completed"
    assert str(result["artifact_id"]).startswith("art_")
    await page.run(chat_back_with_the_sub_session_folded)
    await page.run(told_as_stored(runtime.shell_url, result))
    assert page.console_errors == []
    assert page.errors == []
