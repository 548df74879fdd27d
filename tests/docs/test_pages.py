"""The examples of README.md and of every page of docs/, run as a reader runs them: each page's
code blocks, in order, in an empty folder of its own, with the real `lineup` (see `_runner`
for how a block is run). The MiniApp guide has a test of its own (`test_miniapp_guide.py`)."""

from __future__ import annotations

from pathlib import Path
from typing import Final

import pytest

from ._runner import GUIDE, ROOT, blocks_of, follow

PAGES: Final = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])


def _with_examples() -> list[Path]:
    return [
        page
        for page in PAGES
        if page != GUIDE and any(b.info == "console" for b in blocks_of(page.read_text()))
    ]


def test_the_pages_that_show_commands_keep_them() -> None:
    """A page that lost its `console` blocks would pass below by running nothing."""
    names = {page.relative_to(ROOT).as_posix() for page in _with_examples()}
    assert {
        "README.md",
        "docs/cli.md",
        "docs/apps-and-delivery.md",
        "docs/mcp.md",
        "docs/mcp-servers.md",
    } <= names


@pytest.mark.slow
@pytest.mark.timeout(300)
@pytest.mark.parametrize(
    "page", _with_examples(), ids=lambda page: page.relative_to(ROOT).as_posix()
)
def test_the_examples_of_a_page_run_as_written(page: Path, tmp_path: Path) -> None:
    """Up to three seconds a page quiet, over ten on a loaded machine for apps and delivery,
    by what it is about: every command of the page is a real `lineup` process, as the reader
    runs it. The longest, docs/mcp-servers.md (some 25 CPU-seconds, as long in wall time), has
    the reader list a server in its sandbox, pack two (one an `npm install`), import one and
    start three runtimes that run them: each is a command the page teaches."""
    folder = tmp_path / "page"
    folder.mkdir()
    reader = follow(page, folder)
    assert reader.background is None, f"{page.name}: a command it started in the background runs on"
