"""docs/miniapp-guide.md, followed as a newcomer follows it: its code blocks, in order, in an
empty folder, with the real `lineup` (a real runtime, real processes). How a block is run is
`_runner`'s docstring (the guide's last section says it for readers too)."""

from __future__ import annotations

from pathlib import Path

import pytest

from ._runner import GUIDE, blocks_of, follow


@pytest.mark.slow
@pytest.mark.timeout(600)
def test_the_guide_runs_from_an_empty_folder_to_an_installed_app(tmp_path: Path) -> None:
    """Every command of the guide, run as a reader runs it: each `lineup` command a process of
    its own, and a real runtime for the app. Its time is the guide's own length."""
    blocks = blocks_of(GUIDE.read_text())
    assert sum(b.info == "console" for b in blocks) >= 8, "the guide lost its commands"
    folder = tmp_path / "guide"
    folder.mkdir()
    reader = follow(GUIDE, folder)
    assert reader.background is None and reader.stopped, "every runtime it started was stopped"
