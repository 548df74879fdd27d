"""The page runner's own rules (`_runner`): its wildcards, its diffs and its background
command's lines."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from lineup.tests.support.process import LineReader

from ._runner import Background, apply_diff, blocks_of, output_matches


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


def test_a_background_commands_lines_are_matched_in_order_until_it_ends() -> None:
    process = subprocess.Popen(
        ["printf", "one\\ntwo\\nthree\\n"], stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    background = Background(process, LineReader(process.stdout))
    background.expect("two", "page:1")
    background.expect("three", "page:2")
    # "one" came before the last line matched: not after it, and nothing more is to come.
    with pytest.raises(pytest.fail.Exception, match="never printed 'one'"):
        background.expect("one", "page:3")
    assert process.wait(5) == 0
    background.close()
