"""The bench-only profiling switch: off, it installs nothing; on, a process profiles itself
between SIGUSR1 and SIGUSR2 and writes its stats where it may."""

from __future__ import annotations

import os
import pstats
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from lineup.actors.kernel import _profiling


@pytest.fixture
def restore_signals() -> Iterator[None]:
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGUSR1, signal.SIGUSR2)}
    yield
    for sig, handler in saved.items():
        signal.signal(sig, handler)


def _work() -> int:
    return sum(i * i for i in range(20_000))


def test_without_the_switch_no_handler_is_installed(
    monkeypatch: pytest.MonkeyPatch, restore_signals: None
) -> None:
    monkeypatch.setattr(_profiling, "_DIR", None)
    before = signal.getsignal(signal.SIGUSR1), signal.getsignal(signal.SIGUSR2)
    _profiling.profile_on_signals("router")
    assert (signal.getsignal(signal.SIGUSR1), signal.getsignal(signal.SIGUSR2)) == before


def test_with_the_switch_the_stats_between_the_two_signals_are_written(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, restore_signals: None
) -> None:
    monkeypatch.setattr(_profiling, "_DIR", str(tmp_path))
    _profiling.profile_on_signals("miniapp:bench")
    os.kill(os.getpid(), signal.SIGUSR1)  # handled at the next bytecode, in this thread
    _work()
    os.kill(os.getpid(), signal.SIGUSR2)
    written = tmp_path / f"miniapp_bench-{os.getpid()}.prof"
    functions = {name for _, _, name in pstats.Stats(str(written)).stats}  # type: ignore[attr-defined]
    assert "_work" in functions


def test_a_process_that_may_not_write_there_writes_to_its_own_tmpdir(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, restore_signals: None
) -> None:
    forbidden = tmp_path / "not-a-dir"
    forbidden.write_text("")  # a file: nothing can be written under it
    own = tmp_path / "own"
    own.mkdir()
    monkeypatch.setattr(_profiling, "_DIR", str(forbidden))
    monkeypatch.setenv("TMPDIR", str(own))
    _profiling.profile_on_signals("store")
    os.kill(os.getpid(), signal.SIGUSR1)
    _work()
    os.kill(os.getpid(), signal.SIGUSR2)
    assert (own / f"store-{os.getpid()}.prof").stat().st_size > 0
