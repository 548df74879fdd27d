"""`LINEUP_LOG`, read once for every process (`lineup._logs`): a level in any case or a number;
anything else is the default, and no value stops the tree."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from lineup._logs import log_level
from lineup.tests.support.process import start_lineup_run


@pytest.mark.parametrize(
    ("raw", "level"),
    [
        ("debug", logging.DEBUG),
        ("INFO", logging.INFO),
        (" Warning ", logging.WARNING),
        ("10", 10),
        ("loud", None),
        ("", None),
        (None, None),
        ("-5", None),
    ],
)
def test_a_level_is_named_in_any_case_or_by_number_else_none(
    raw: str | None, level: int | None
) -> None:
    assert log_level(raw) == level


async def test_lineup_run_starts_whatever_lineup_log_says(tmp_path: Path) -> None:
    # `logging` refuses an unknown level with a ValueError: `LINEUP_LOG=debug` (lower case)
    # once stopped the supervisor and every actor at their start.
    process = await start_lineup_run(tmp_path / "rt", env={"LINEUP_LOG": "loud"})
    try:
        assert any(line.startswith("lineup: ready in") for line in process.lines)
    finally:
        process.kill()
        await process.wait()
