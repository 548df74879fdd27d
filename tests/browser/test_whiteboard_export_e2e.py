"""The Whiteboard's Export in real Chromium against the real runtime (issue 14): the first user
of `artifact.save`.

The Whiteboard is opened by its deep link (`#token=…&open=whiteboard`), the user draws a stroke
in the Surface's iframe, clicks Export; the runtime's own permission prompt (the Shell's
dialog) names the Whiteboard and `artifact.save`; Allow once starts the download, and the file
saved is exactly the artifact the app made: its SHA-256 and size are the store's row's. The
Surface shows the outcome. Browser waits are Playwright's auto-waiting `expect` and
`expect_download`; no sleeps.
"""

from __future__ import annotations

import hashlib
from functools import partial
from pathlib import Path
from typing import Final

import apsw
import trio
from playwright.sync_api import Page, expect

from lineup.tests.support.browser import ready_frame
from lineup.tests.support.runtime import start_runtime

from .conftest import ShellPage

WAIT_MS: Final = 15_000  # a real runtime: processes, an HTTP AppServer
FRAME: Final = '[data-testid="surface-frame"]'
PNG_MAGIC: Final = b"\x89PNG\r\n\x1a\n"
# A stroke's pointer events on the board's canvas, in board coordinates.
DRAW: Final = """
(points) => {
  const canvas = document.getElementById("canvas");
  const box = canvas.getBoundingClientRect();
  const at = ([x, y]) => ({
    clientX: box.left + (x / 1600) * box.width,
    clientY: box.top + (y / 1000) * box.height,
    pointerId: 7, pointerType: "mouse", isPrimary: true, button: 0, buttons: 1,
    bubbles: true, cancelable: true,
  });
  canvas.dispatchEvent(new PointerEvent("pointerdown", at(points[0])));
  for (const point of points.slice(1)) {
    canvas.dispatchEvent(new PointerEvent("pointermove", at(point)));
  }
  canvas.dispatchEvent(new PointerEvent("pointerup", at(points[points.length - 1])));
}
"""


board_frame = partial(ready_frame, ready='body[data-state="ready"]', wait_ms=WAIT_MS)


def stored_artifact(data_dir: Path, artifact_id: str) -> tuple[str, int, str, str]:
    """The artifact's row as the runtime's store keeps it: sha256, size, name, app."""
    conn = apsw.Connection(str(data_dir / "lineup.db"), flags=apsw.SQLITE_OPEN_READONLY)
    try:
        rows = conn.execute(
            "SELECT sha256, size, name, app_scope FROM artifacts WHERE artifact_id = ?",
            (artifact_id,),
        ).fetchall()
    finally:
        conn.close()
    assert len(rows) == 1
    sha256, size, name, scope = rows[0]
    assert isinstance(sha256, str) and isinstance(size, int)
    assert isinstance(name, str) and isinstance(scope, str)
    return sha256, size, name, scope


async def test_export_saves_the_boards_png_after_the_users_allow_once(
    nursery: trio.Nursery, data_dir: Path, page: ShellPage, tmp_path: Path
) -> None:
    runtime = await start_runtime(nursery, data_dir, demo_agent=False)

    def draw(p: Page) -> None:
        p.goto(runtime.shell_url + "&open=whiteboard")
        expect(p.get_by_test_id("runtime-state")).to_have_attribute(
            "data-state", "online", timeout=WAIT_MS
        )
        board_frame(p).evaluate(DRAW, [[200, 200], [600, 400], [1000, 300]])
        body = p.frame_locator(FRAME).locator("body")
        expect(body).to_have_attribute("data-items", "1", timeout=WAIT_MS)
        expect(body).to_have_attribute("data-pending", "0", timeout=WAIT_MS)

    await page.run(draw)

    def export(p: Page) -> tuple[bytes, str, str]:
        body = p.frame_locator(FRAME).locator("body")
        with p.expect_download(timeout=WAIT_MS) as downloading:
            body.locator("#export").click(timeout=WAIT_MS)
            dialog = p.get_by_test_id("permission-prompt")
            expect(dialog).to_be_visible(timeout=WAIT_MS)
            expect(dialog).to_have_attribute("data-capability", "artifact.save")
            expect(p.get_by_test_id("permission-heading")).to_contain_text("Whiteboard")
            expect(p.get_by_test_id("permission-purpose")).to_contain_text("PNG file")
            p.get_by_test_id("permission-allow-once").click(timeout=WAIT_MS)
            expect(dialog).to_be_hidden(timeout=WAIT_MS)
        download = downloading.value
        saved = tmp_path / "saved.png"
        download.save_as(saved)
        expect(body).to_have_attribute("data-export", "completed", timeout=WAIT_MS)
        expect(body.locator("#board-status")).to_contain_text("Exported", timeout=WAIT_MS)
        artifact_id = body.get_attribute("data-export-artifact", timeout=WAIT_MS)
        assert artifact_id is not None
        return saved.read_bytes(), download.suggested_filename, artifact_id

    data, filename, artifact_id = await page.run(export)
    sha256, size, name, scope = stored_artifact(data_dir, artifact_id)
    assert (hashlib.sha256(data).hexdigest(), len(data)) == (sha256, size)
    assert data.startswith(PNG_MAGIC)
    assert scope == "whiteboard" and filename == name and name.endswith(".png")
    assert page.console_errors == []
