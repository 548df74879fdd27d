"""The Whiteboard's and the App Registry's frames follow their pages' height both ways, in real
Chromium against the real runtime (`start_runtime`), with the Agent opening each Surface.

Each Surface reports its size with the bridge client's `LineUpBridge.trackSize()`. They used
to report the document's scrollHeight, which never drops below the frame's height: a frame
grew with its page but never shrank (a narrower Shell, less content). Here the Whiteboard's
canvas (16:10, the stage's width) gets shorter with a narrower Shell, and so must its frame
(the App Registry's table scrolls sideways instead: its height hardly depends on the width);
and both frames grow with content added to the page and shrink back when it goes.
"Fits" is the frame's inner height equal to the page's own height (to the pixel: sizes are
rounded up). Browser waits are Playwright's `wait_for_function`; waits on the AppServer run
under `fail_after`. No sleeps.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Final

import trio
from playwright.sync_api import Frame, Page, ViewportSize

from lineup.tests.support.browser import greeted_in_the_shell, ready_frame
from lineup.tests.support.runtime import CONVERSATION

from . import test_app_registry_e2e as registry_e2e
from . import test_whiteboard_e2e as whiteboard_e2e
from .conftest import ShellPage

WAIT_MS: Final = whiteboard_e2e.WAIT_MS
WAIT_S: Final = whiteboard_e2e.WAIT_S
WIDE: Final[ViewportSize] = {"width": 900, "height": 640}  # the page fixture's
NARROW: Final[ViewportSize] = {"width": 640, "height": 640}
EXTRA_PX: Final = 900  # content added to a page, then taken away

FITS: Final = "Math.abs(innerHeight - document.documentElement.getBoundingClientRect().height) <= 1"


surface_frame = partial(ready_frame, ready='body[data-state="ready"]', wait_ms=WAIT_MS)


def fits(frame: Frame, condition: str = "true", height: float = 0) -> float:
    """Waits until the frame is its page's height and `condition` (of `h`, `height`) holds;
    answers that height."""
    frame.wait_for_function(f"(h) => {FITS} && ({condition})", arg=height, timeout=WAIT_MS)
    got: float = frame.evaluate("() => innerHeight")
    return got


def follows_its_content(p: Page) -> None:
    """Content added: the frame grows by it; taken away: it shrinks back to the page."""
    frame = surface_frame(p)
    before = fits(frame)
    frame.evaluate(
        """(px) => {
          const extra = document.createElement("div");
          extra.id = "size-test-extra";
          extra.style.height = px + "px";
          document.body.append(extra);
        }""",
        EXTRA_PX,
    )
    fits(frame, f"innerHeight >= h + {EXTRA_PX} - 1", before)
    frame.evaluate("() => document.getElementById('size-test-extra').remove()")
    fits(frame, "Math.abs(innerHeight - h) <= 1", before)


def shrinks_with_a_narrower_shell(p: Page) -> None:
    """The Whiteboard: its canvas is as wide as the stage, so a narrower Shell makes the page,
    and the frame, shorter; a wider one, taller again."""
    frame = surface_frame(p)
    before = fits(frame)
    p.set_viewport_size(NARROW)
    fits(frame, "innerHeight < h - 50", before)
    p.set_viewport_size(WIDE)
    fits(frame, "Math.abs(innerHeight - h) <= 1", before)


async def test_the_whiteboards_frame_shrinks_with_a_narrower_shell_and_less_content(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage
) -> None:
    _, agent, revision = await greeted_in_the_shell(
        nursery, data_dir, page, whiteboard_e2e.GREETING, wait_ms=whiteboard_e2e.WAIT_MS
    )
    await whiteboard_e2e.open_board(agent, revision, page, board_id="sizes")
    await page.run(shrinks_with_a_narrower_shell)
    await page.run(follows_its_content)
    assert page.off_loopback() == [], "a request left 127.0.0.1"
    assert page.errors == []


async def test_the_app_registrys_frame_shrinks_with_less_content(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage
) -> None:
    _, agent, revision = await greeted_in_the_shell(
        nursery, data_dir, page, registry_e2e.GREETING, wait_ms=registry_e2e.WAIT_MS
    )
    with trio.fail_after(WAIT_S):
        await agent.client.call_tool(
            CONVERSATION, "app-registry.open", {}, revision, call_id="open-1"
        )
    opened = await agent.terminal("open-1")
    assert opened["payload"]["result"] == {"opened": True}
    await page.run(registry_e2e.registry_in_front)
    await page.run(follows_its_content)
    assert page.off_loopback() == [], "a request left 127.0.0.1"
    assert page.errors == []
