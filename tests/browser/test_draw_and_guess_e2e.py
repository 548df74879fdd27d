"""Draw-and-Guess end to end in real Chromium against the real runtime (issue 17), started as
`make run` starts it: `lineup run --catalog DIR`, the embedded default, where DIR is the
catalog the catalog builder (`lineup.ops.catalog`) packs and signs from `examples/` with a
development key made for this module.

The user opens the App Registry (asked by the Agent), installs Draw-and-Guess from its
"Available" list and allows it in the runtime's prompt with the keyboard. The Agent (an
`AgentClient` on the embedded AppServer) calls `draw-and-guess.start_round`: the game comes to
the front, and its Surface shows the word, which the test reads there (the Agent is never told
it). The user draws with synthetic pointer events in the Surface's frame, and the strokes are
applied by the app (nothing pending). The Agent looks (`get_drawing`: a PNG artifact, and the
PNG inline), guesses wrong (the Surface shows the guess and one try less), then right: the
start_round call gets its one result, the word, the guesses and `won`, and the chat is back
in front. A second round on the same runtime ends with the user giving up, reaching the
Surface's Give up with Tab and taking it with Enter: `gave_up`, the chat in front again.
The game's frame is as tall as its page, never scrolled, and shrinks with a narrower Shell.

Browser waits are Playwright's auto-waiting `expect`; waits on the AppServer run under
`fail_after`. No sleeps.
"""

from __future__ import annotations

import base64
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final
from urllib.parse import urljoin

import pytest
import trio
from playwright.sync_api import Frame, FrameLocator, Locator, Page, expect

from lineup.tests.support.agent_view import FINALS, AgentView
from lineup.tests.support.browser import greeted_in_the_shell
from lineup.tests.support.runtime import CONVERSATION
from lineup.tests.support.session_builds import make_run_catalog

from .conftest import ShellPage
from .test_app_registry_e2e import (
    GREETING,
    WAIT_MS,
    WAIT_S,
    registry,
)

EXAMPLES: Final = Path(__file__).resolve().parents[2] / "examples"
BUNDLE: Final = "draw-and-guess-1.0.0.lineup"
SCOPE: Final = "draw-and-guess"
TITLE: Final = "Draw and Guess"  # its manifest's: what the Shell and the App Registry show
START: Final = "draw-and-guess.start_round"
RESULT: Final = "lineup.v1.tool.result"
INVENTORY: Final = "lineup.v1.client.inventory"
FRAME: Final = '[data-testid="surface-frame"]'
GAME: Final = FRAME  # the only Surface open while a round plays (the App Registry is closed)
PNG_SIGNATURE: Final = b"\x89PNG\r\n\x1a\n"
WRONG: Final = "definitely not it"

# Dispatches one stroke's pointer events on the game's canvas, in canvas coordinates (800×600).
DRAW: Final = """
(points) => {
  const canvas = document.getElementById("canvas");
  const box = canvas.getBoundingClientRect();  // its content box is inside its border
  const at = ([x, y]) => ({
    clientX: box.left + canvas.clientLeft + (x / 800) * canvas.clientWidth,
    clientY: box.top + canvas.clientTop + (y / 600) * canvas.clientHeight,
    pointerId: 3, pointerType: "mouse", isPrimary: true, button: 0, buttons: 1,
    bubbles: true, cancelable: true,
  });
  canvas.dispatchEvent(new PointerEvent("pointerdown", at(points[0])));
  for (const point of points.slice(1)) {
    canvas.dispatchEvent(new PointerEvent("pointermove", at(point)));
  }
  canvas.dispatchEvent(new PointerEvent("pointerup", at(points[points.length - 1])));
}
"""
# A house: a square, then its roof; two strokes.
STROKES: Final = (
    [(250, 500), (250, 300), (550, 300), (550, 500), (250, 500)],
    [(230, 310), (400, 150), (570, 310)],
)


@pytest.fixture(scope="module")
def catalog(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The catalog `make run` would offer: every example and its MCP server packed and signed
    (once a test session, `lineup.tests.support.session_builds`)."""
    out = make_run_catalog(tmp_path_factory)
    assert (out / BUNDLE).is_file()
    return out


def tabs(p: Page) -> Locator:
    return p.get_by_test_id("app-switcher").get_by_test_id("app-tab")


def game(p: Page) -> FrameLocator:
    return p.frame_locator(GAME)


def game_body(p: Page) -> Locator:
    return game(p).locator("body")


def game_frame(p: Page) -> Frame:
    handle = p.locator(GAME).element_handle(timeout=WAIT_MS)
    frame = handle.content_frame()
    assert frame is not None
    return frame


def install_from_the_catalog(p: Page) -> None:
    """The App Registry is in front; Draw-and-Guess is installed from "Available", with the
    keyboard alone: Enter on its Install button, Tab to Allow once in the prompt, Enter."""
    expect(p.locator(FRAME)).to_have_count(1, timeout=WAIT_MS)
    expect(registry(p).locator("body")).to_have_attribute("data-state", "ready", timeout=WAIT_MS)
    entry = registry(p).locator(f'#available tr[data-file="{BUNDLE}"]')
    expect(entry).to_contain_text(TITLE, timeout=WAIT_MS)
    button = entry.get_by_role("button", name=f"Install {TITLE} 1.0.0")
    button.focus(timeout=WAIT_MS)
    expect(button).to_be_focused()
    p.keyboard.press("Enter")
    prompt = p.get_by_test_id("permission-prompt")
    expect(prompt).to_be_visible(timeout=WAIT_MS)
    expect(prompt.get_by_test_id("permission-capability")).to_contain_text("app.install")
    # The app by its title, not its id (issue 28: apps are shown by title everywhere).
    expect(prompt.get_by_test_id("permission-detail")).to_contain_text(f"{TITLE} 1.0.0")
    expect(prompt.get_by_test_id("permission-deny")).to_be_focused(timeout=WAIT_MS)
    expect(prompt).to_have_attribute("data-armed", "true")  # no answer in its first moments
    p.keyboard.press("Tab")
    expect(prompt.get_by_test_id("permission-allow-once")).to_be_focused()
    p.keyboard.press("Enter")
    expect(prompt).to_be_hidden(timeout=WAIT_MS)
    expect(registry(p).locator("#status")).to_have_text(
        f"Installed {TITLE} 1.0.0.", timeout=WAIT_MS
    )
    expect(registry(p).locator(f'tr[data-app="{SCOPE}"]')).to_have_attribute(
        "data-enabled", "true", timeout=WAIT_MS
    )
    expect(registry(p).locator(f'tr[data-app="{SCOPE}"]')).to_contain_text(TITLE)


def close_the_registry(p: Page) -> None:
    """The user closes the App Registry's tab (Enter on its close button): the chat is back."""
    close = p.get_by_role("button", name="Close App Registry")
    close.focus(timeout=WAIT_MS)
    p.keyboard.press("Enter")
    chat_in_front(p)


def game_in_front(p: Page) -> str:
    """The game's Surface is in front, a round playing; answers the word it shows the user."""
    body = game_body(p)
    expect(body).to_have_attribute("data-state", "ready", timeout=WAIT_MS)
    expect(body).to_have_attribute("data-phase", "playing", timeout=WAIT_MS)
    expect(p.locator(GAME)).to_be_visible()
    expect(p.get_by_test_id("chat")).to_be_hidden(timeout=WAIT_MS)
    expect(tabs(p)).to_have_count(2, timeout=WAIT_MS)
    expect(tabs(p).and_(p.locator(f'[data-app-scope="{SCOPE}"]'))).to_have_text(TITLE)
    expect(body).to_have_attribute("data-tries-left", "5", timeout=WAIT_MS)
    expect(body).to_have_attribute("data-guesses", "0")
    expect(game(p).locator("#tries")).to_have_text("Tries left: 5 of 5")
    # The frame is as tall as the game's document asks: all of it shown, nothing to scroll.
    game_frame(p).wait_for_function(
        "() => document.documentElement.scrollHeight <= innerHeight", timeout=WAIT_MS
    )
    word = game(p).locator("#word").text_content(timeout=WAIT_MS)
    assert word, "the Surface shows no word"
    return word


def draw(p: Page) -> None:
    """The user draws each stroke; all are applied by the app (none pending)."""
    frame = game_frame(p)
    for stroke in STROKES:
        frame.evaluate(DRAW, [list(point) for point in stroke])
    body = game_body(p)
    expect(body).to_have_attribute("data-pending", "0", timeout=WAIT_MS)
    expect(body).to_have_attribute("data-strokes", str(len(STROKES)), timeout=WAIT_MS)


def guess_shown(tries_left: int, guesses: list[str]) -> Callable[[Page], None]:
    def check(p: Page) -> None:
        body = game_body(p)
        expect(body).to_have_attribute("data-tries-left", str(tries_left), timeout=WAIT_MS)
        expect(body).to_have_attribute("data-guesses", str(len(guesses)), timeout=WAIT_MS)
        expect(game(p).locator("#guesses li")).to_have_text(guesses)
        expect(game(p).locator("#tries")).to_have_text(f"Tries left: {tries_left} of 5")

    return check


def canvas_pixel(p: Page, x: int, y: int) -> list[int]:
    """The RGBA of the Surface's canvas at canvas point (x, y), read in the frame."""
    value: list[int] = game_frame(p).evaluate(
        """([x, y]) => Array.from(
          document.getElementById("canvas").getContext("2d").getImageData(x, y, 1, 1).data)""",
        [x, y],
    )
    return value


def drawing_is_an_artifact_of_the_round(artifact_id: str, png: bytes) -> Callable[[Page], None]:
    """The drawing's artifact is the user's too: its card is in the round's sub-session group
    in the chat, and the bytes it serves are the PNG the Agent got inline."""

    def check(p: Page) -> None:
        card = p.locator(f'[data-testid="artifact-card"][data-artifact-id="{artifact_id}"]')
        expect(card).to_have_count(1, timeout=WAIT_MS)
        expect(card.get_by_test_id("artifact-meta")).to_contain_text("PNG image")
        href = card.get_by_test_id("artifact-open").get_attribute("href", timeout=WAIT_MS)
        assert href is not None
        served = p.context.request.get(urljoin(p.url, href))
        assert served.status == 200
        assert served.headers["content-type"].split(";")[0] == "image/png"
        assert served.body() == png

    return check


def fits_a_narrower_shell(p: Page) -> None:
    """The Shell narrows: the canvas (4:3) gets shorter, and so does the frame, to the page."""
    before = p.locator(GAME).bounding_box(timeout=WAIT_MS)
    assert before is not None
    p.set_viewport_size({"width": 640, "height": 640})
    game_frame(p).wait_for_function(
        "() => Math.abs(innerHeight - document.documentElement.getBoundingClientRect().height)"
        " <= 1 && innerHeight < 600",
        timeout=WAIT_MS,
    )
    after = p.locator(GAME).bounding_box(timeout=WAIT_MS)
    assert after is not None and after["height"] < before["height"]
    p.set_viewport_size({"width": 900, "height": 640})


def give_up_with_the_keyboard(p: Page) -> None:
    """From the canvas, Tab reaches Clear and then Give up; Enter gives up."""
    game(p).locator("#canvas").focus(timeout=WAIT_MS)
    p.keyboard.press("Tab")
    expect(game(p).get_by_role("button", name="Clear the drawing")).to_be_focused()
    p.keyboard.press("Tab")
    give_up = game(p).get_by_role("button", name="Give up this round")
    expect(give_up).to_be_focused()
    p.keyboard.press("Enter")


def chat_in_front(p: Page) -> None:
    """The stage shows the chat, and no app is open but it."""
    expect(p.locator(FRAME)).to_have_count(0, timeout=WAIT_MS)
    expect(tabs(p)).to_have_text(["Chat"], timeout=WAIT_MS)
    expect(p.get_by_test_id("chat")).to_be_visible(timeout=WAIT_MS)
    expect(p.get_by_test_id("composer")).to_be_visible(timeout=WAIT_MS)
    assert p.evaluate("window.__cspViolations") == []


async def start_tools(agent: AgentView) -> str:
    """The inventory revision that first has start_round (after the install)."""

    def has_game(message: dict[str, Any]) -> bool:
        return START in {t["method"] for t in message["payload"]["tools"]}

    told = await agent.pull(INVENTORY, has_game)
    return str(told["payload"]["revision"])


async def call(
    agent: AgentView, revision: str, tool: str, input: dict[str, Any], call_id: str
) -> Any:
    with trio.fail_after(WAIT_S):
        await agent.client.call_tool(CONVERSATION, tool, input, revision, call_id=call_id)
    done = await agent.terminal(call_id)
    assert done["type"] == RESULT, done["payload"]
    return done["payload"]["result"]


async def test_draw_and_guess_installed_from_the_catalog_won_then_given_up(
    nursery: trio.Nursery, data_dir: Path, catalog: Path, page: ShellPage
) -> None:
    """About ten seconds on a loaded machine: the example installed from `make run`'s catalog
    and two whole rounds with the Agent through the Shell (one won, one given up by keyboard),
    which is the claim."""
    _, agent, revision = await greeted_in_the_shell(
        nursery, data_dir, page, GREETING, wait_ms=WAIT_MS, catalog=catalog
    )

    # Installed from the catalog, through the App Registry and the runtime's prompt.
    await call(agent, revision, "app-registry.open", {}, "open-1")
    await page.run(install_from_the_catalog)
    await page.run(close_the_registry)
    revision = await start_tools(agent)

    # Round one: started by the Agent, drawn by the user, guessed wrong, then right.
    with trio.fail_after(WAIT_S):
        await agent.client.call_tool(CONVERSATION, START, {}, revision, call_id="round-1")
    word = await page.run(game_in_front)
    await page.run(draw)
    assert await page.run(lambda p: canvas_pixel(p, 250, 400)) == [31, 35, 40, 255]  # the pen
    assert await page.run(lambda p: canvas_pixel(p, 400, 400)) == [255, 255, 255, 255]

    drawing = await call(agent, revision, "draw-and-guess.get_drawing", {}, "look-1")
    png = base64.b64decode(drawing["png_base64"], validate=True)
    assert png.startswith(PNG_SIGNATURE)
    assert png[16:24] == (800).to_bytes(4, "big") + (600).to_bytes(4, "big")  # IHDR: full size
    assert (drawing["width"], drawing["height"], drawing["strokes"]) == (800, 600, len(STROKES))
    assert str(drawing["artifact_id"]).startswith("art_")

    wrong = await call(agent, revision, "draw-and-guess.guess", {"word": WRONG}, "guess-1")
    assert wrong == {"correct": False, "tries_left": 4, "outcome": "playing"}
    await page.run(guess_shown(4, [f"{WRONG} — wrong"]))
    await agent.settle()
    assert agent.of_call("round-1", *FINALS) == []  # the round plays on

    right = await call(agent, revision, "draw-and-guess.guess", {"word": word.upper()}, "guess-2")
    assert right == {"correct": True, "tries_left": 4, "outcome": "won"}
    won = await agent.terminal("round-1")
    assert won["type"] == RESULT, won["payload"]
    assert won["payload"]["result"] == {
        "word": word,
        "guesses": [WRONG, word.upper()],
        "outcome": "won",
    }
    await page.run(chat_in_front)
    await page.run(drawing_is_an_artifact_of_the_round(drawing["artifact_id"], png))

    # Round two, on the same runtime: the user gives up with the keyboard.
    with trio.fail_after(WAIT_S):
        await agent.client.call_tool(CONVERSATION, START, {}, revision, call_id="round-2")
    second = await page.run(game_in_front)
    await page.run(fits_a_narrower_shell)
    await page.run(give_up_with_the_keyboard)
    gave_up = await agent.terminal("round-2")
    assert gave_up["type"] == RESULT, gave_up["payload"]
    assert gave_up["payload"]["result"] == {"word": second, "guesses": [], "outcome": "gave_up"}
    await page.run(chat_in_front)

    await agent.settle()
    for call_id in ("round-1", "round-2"):
        assert [m["type"] for m in agent.of_call(call_id, *FINALS)] == [RESULT]  # one result
    assert page.off_loopback() == [], "a request left 127.0.0.1"
    assert page.errors == []
