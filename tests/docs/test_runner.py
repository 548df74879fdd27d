"""The page runner's own rules (`_runner`): its wildcards and its diffs."""

from __future__ import annotations

from pathlib import Path

import pytest

from ._runner import apply_diff, blocks_of, output_matches


def test_output_matching_understands_the_pages_wildcards() -> None:
    assert output_matches(["a", "...", "d"], ["a", "b", "c", "d"])
    assert output_matches(["a", "...", "b"], ["a", "b"])
    assert output_matches(["x ... y"], ["x 1 2 y"])
    assert not output_matches(["a"], ["a", "b"])
    assert not output_matches(["x ... y"], ["x 1 2 z"])


def test_a_diff_applies_by_its_context_and_refuses_what_is_not_there(tmp_path: Path) -> None:
    (tmp_path / "f.py").write_text("a\nb\nc\n")
    apply_diff(tmp_path, "--- a/f.py\n+++ b/f.py\n@@\n a\n-b\n+B\n c\n", "t")
    assert (tmp_path / "f.py").read_text() == "a\nB\nc\n"
    with pytest.raises(AssertionError):
        apply_diff(tmp_path, "+++ b/f.py\n@@\n-b\n", "t")


def test_blocks_are_read_with_their_kind_and_the_line_they_start_on() -> None:
    page = "# Title\n\n```console\n$ lineup --help\n```\n\ntext\n\n```text\nnot run\n```\n"
    blocks = blocks_of(page)
    assert [(b.info, b.line) for b in blocks] == [("console", 3), ("text", 9)]
    assert blocks[0].text == "$ lineup --help\n"
