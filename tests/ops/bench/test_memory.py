"""The idle tree's memory in `make bench`: every process of `lineup run`, read from /proc."""

from __future__ import annotations

import os

import pytest

from lineup.ops.bench._memory import bare_interpreter, idle_tree, rollup
from lineup.tests.supervisor.test_cli import ACTORS


def test_a_process_memory_is_its_private_and_shared_pages_and_its_share_of_them() -> None:
    mine = rollup(os.getpid(), "pytest")
    assert mine.name == "pytest"
    assert 0 < mine.uss <= mine.pss <= mine.uss + mine.shared


def test_a_bare_interpreter_is_measured_alone_with_trio_and_pydantic_imported() -> None:
    bare = bare_interpreter(1)
    assert bare.uss > 5 * 1024  # KiB: trio and pydantic are in it, not an empty interpreter


@pytest.mark.slow
def test_the_idle_tree_is_every_process_of_lineup_run_each_named() -> None:
    tree = idle_tree()
    names = [p.name for p in tree]
    # The supervisor, its two zygotes and every child, the demo Agent (after ready) included.
    assert sorted(names) == sorted(["supervisor", "zygote", "zygote 2", *ACTORS])
    assert all(p.pss > 0 and p.uss > 0 for p in tree)
