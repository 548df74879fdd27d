"""The test processes' `ast.parse` (`support/atomic_parse.py`): no Python code, so no other
thread, runs while it builds a tree, on the CPython releases whose constructor depth threads
share."""

from __future__ import annotations

import ast
import gc
import sys
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from lineup.tests.support import atomic_parse

SOURCE = "\n".join(f"value_{i} = [{i}, {{'k': ({i}, {i} + 1)}}]" for i in range(300))


@pytest.fixture
def collections_in_parse() -> Iterator[Callable[[Callable[..., Any]], int]]:
    """How many collections start inside the interpreter's parse (the frame of `ast.parse`,
    whose `compile` builds the tree) during one call of `parse`, with a collection due at nearly
    every allocation."""
    started: list[str] = []
    inside = atomic_parse._PARSE.__code__

    def record(phase: str, info: dict[str, int]) -> None:
        if phase == "start" and sys._getframe(1).f_code is inside:
            started.append(phase)

    def count(parse: Callable[..., Any]) -> int:
        started.clear()
        gc.set_threshold(1, 1, 1)
        try:
            parse(SOURCE)
        finally:
            gc.set_threshold(*thresholds)
        return len(started)

    thresholds = gc.get_threshold()
    gc.callbacks.append(record)
    try:
        yield count
    finally:
        gc.callbacks.remove(record)


def test_the_interpreters_parse_runs_collections_and_ours_none(
    collections_in_parse: Callable[[Callable[..., Any]], int],
) -> None:
    # A collection is where the GIL can pass to another thread mid-parse.
    assert collections_in_parse(atomic_parse._PARSE) > 0
    assert collections_in_parse(atomic_parse.parse_atomically) == 0
    assert gc.isenabled()  # and collection is back on after it


def test_a_syntax_error_is_the_interpreters_and_collection_comes_back() -> None:
    with pytest.raises(SyntaxError):
        atomic_parse.parse_atomically("def (")
    assert gc.isenabled()


def test_the_session_parses_atomically_exactly_where_the_race_exists() -> None:
    assert atomic_parse.affected((3, 11, 7)) and not atomic_parse.affected((3, 11, 8))
    assert not atomic_parse.affected((3, 12, 0))
    expected = atomic_parse.parse_atomically if atomic_parse.affected() else atomic_parse._PARSE
    assert ast.parse is expected, sys.version_info
