"""A trio test's own deadline: past its timeout, the test fails inside its trio run, with where
each of its tasks was waiting, and its worker runs on.

pytest-timeout alone cannot do that for a trio test. Its `signal` method raises wherever the
loop happens to be and abandons it (every later trio test on the worker then fails); its
`thread` method dumps the stacks into pytest's capture of the dying worker, where nobody sees
them, and ends the worker, which `--dist loadgroup` cannot replace without hanging (xdist
#1378). So a trio test is failed here first, at its timeout, by a task of its own run; the
`thread` method stays as its backstop, `BACKSTOP_S` later, for one that ignores the
cancellation. A test that is not trio's keeps the `thread` method alone, at its timeout.
"""

from __future__ import annotations

import contextlib
import inspect
import sysconfig
import threading
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import Any, Final

import pytest
import trio

BACKSTOP_S: Final = 30.0  # after a trio test's deadline, pytest-timeout ends its worker
# The package as imported (linked into the environment's site-packages), and as it is on disk.
_LINKED: Final = str(Path(__file__).parents[2]) + "/"
_ROOTS: Final = (_LINKED, str(Path(__file__).resolve().parents[2]) + "/")
# Frames of the libraries and of Python itself say nothing about where a test waited.
_LIBRARIES: Final = tuple(sysconfig.get_paths()[key] + "/" for key in ("stdlib", "purelib"))


class StalledTest(Exception):
    """A trio test ran past its timeout."""


def declared_timeout(item: pytest.Item) -> float:
    """The timeout `item` declares (its `timeout` marker), or the suite's (`timeout` in the
    configuration)."""
    marker = item.get_closest_marker("timeout")
    if marker is not None and marker.args:
        return float(marker.args[0])
    return float(item.config.getini("timeout") or 0)


def arm(items: list[pytest.Item]) -> None:
    """Run each trio test with a deadline at its declared timeout (pytest-trio's `trio` marker
    names the function that runs it), and move pytest-timeout's for it `BACKSTOP_S` later."""
    for item in items:
        function = getattr(item, "function", None)
        seconds = declared_timeout(item)
        if function is None or not inspect.iscoroutinefunction(function) or seconds <= 0:
            continue
        item.add_marker(pytest.mark.trio(run=partial(run_within, seconds)), append=False)
        item.add_marker(pytest.mark.timeout(seconds + BACKSTOP_S), append=False)


def run_within(seconds: float, test: Callable[[], Awaitable[object]], **options: Any) -> object:
    """`trio.run(test, **options)`, the test cancelled and failed with `StalledTest` once
    `seconds` pass. On the wall's clock, not trio's: a test on a mock clock (`autojump_clock`)
    may wait hours of its own time in a second of ours. Watched from a system task, so a test
    that fails in time fails as it would without the deadline, in no group of ours."""
    __tracebackhide__ = True  # the report is the test's, and where it waited

    async def main() -> object:
        __tracebackhide__ = True
        token = trio.lowlevel.current_trio_token()
        expired = trio.Event()
        stalled: list[str] = []  # where its tasks waited, once it stalled

        def expire() -> None:
            with contextlib.suppress(trio.RunFinishedError):
                token.run_sync_soon(expired.set)

        with trio.CancelScope() as scope:

            async def watch() -> None:
                await expired.wait()
                stalled.append(waiting())
                scope.cancel()

            trio.lowlevel.spawn_system_task(watch)
            timer = threading.Timer(seconds, expire)
            timer.daemon = True
            timer.start()
            try:
                return await test()
            except BaseException as exc:
                if not stalled:
                    raise
                errors = _besides_cancelled(exc)
                if errors is None:
                    raise  # only the cancellation, which the scope takes
                raise _stalled(seconds, stalled[0]) from errors  # its own, as it was cancelled
            finally:
                timer.cancel()
        raise _stalled(seconds, stalled[0])

    return trio.run(main, **options)


def _besides_cancelled(exc: BaseException) -> BaseException | None:
    """What `exc` holds besides trio's cancellation, if anything."""
    if isinstance(exc, BaseExceptionGroup):
        return exc.split(trio.Cancelled)[1]
    return None if isinstance(exc, trio.Cancelled) else exc


def _stalled(seconds: float, where: str) -> StalledTest:
    return StalledTest(f"still running after its timeout of {seconds:.0f} s; {where}")


def waiting() -> str:
    """Where each task of this trio run waits: its await chain without the libraries' frames
    (the innermost last)."""
    lines: list[str] = []

    def visit(task: trio.lowlevel.Task) -> None:
        frames = [
            f"{_place(frame.f_code.co_filename)}:{lineno} {frame.f_code.co_name}"
            for frame, lineno in task.iter_await_frames()
            if _shown(frame.f_code.co_filename)
        ]
        if frames:
            lines.append(f"  {task.name}:\n    " + "\n    ".join(frames))
        for nursery in task.child_nurseries:
            for child in nursery.child_tasks:
                visit(child)

    root = trio.lowlevel.current_root_task()
    assert root is not None  # called from a task of the run
    visit(root)
    return "where its tasks waited:\n" + "\n".join(lines)


def _shown(filename: str) -> bool:
    if filename == __file__:
        return False  # the deadline's own tasks
    return filename.startswith(_LINKED) or not filename.startswith(_LIBRARIES)


def _place(filename: str) -> str:
    for root in _ROOTS:
        if filename.startswith(root):
            return filename[len(root) :]
    return filename
