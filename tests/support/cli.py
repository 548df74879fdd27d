"""A `lineup` command run in the test's own process: `lineup.supervisor.cli.main(argv)`, the
same dispatch the installed command runs, its stdout, stderr and exit status captured as
`subprocess.run` would give them.

Theory of operation: a fresh interpreter costs ~0.45 CPU-s of imports before the command does
anything, which was most of what a test of a command's output, exit status or files spent. Where
that is the claim, `lineup(...)` runs the command here instead; each command family keeps at
least one test that runs it as a real process (`process.lineup_app`, `LineupProcess`), so the
entry point and its exit status stay proven. What a command changes in the process is put back
after it: the working directory, the environment, `sys.path`, the modules it imported from the
folders it was pointed at (a MiniApp package `lineup app pack` imported, which the next test's
package of the same name must not meet in `sys.modules`), the process title (`lineup run` sets
it), the root logger (`lineup run` configures it) and stdin (none: not a terminal, as
`stdin=DEVNULL`).
"""

from __future__ import annotations

import contextlib
import io
import logging
import os
import subprocess
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path

import setproctitle

from lineup.supervisor.cli import main

__all__ = ["lineup"]


def lineup(
    *args: str, cwd: Path | None = None, env: Mapping[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    """`lineup ARGS` in this process, from `cwd` (else here), with `env` added to the
    environment: its exit status and output. An exception the command lets out fails the test,
    as the traceback a user would see would."""
    argv = list(args)
    stdout = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", write_through=True)
    stderr = io.StringIO()
    with (
        _restored(cwd, env),
        contextlib.redirect_stdout(stdout),
        contextlib.redirect_stderr(stderr),
    ):
        stdin, sys.stdin = sys.stdin, io.StringIO("")
        code: object = 0  # `main` exits with the command's status: it returns only by exception
        try:
            main(argv)
        except SystemExit as exc:
            code = exc.code
        finally:
            sys.stdin = stdin
    stdout.flush()
    buffer = stdout.buffer
    assert isinstance(buffer, io.BytesIO)
    if code is None:
        code = 0
    assert isinstance(code, int), code
    return subprocess.CompletedProcess(
        ["lineup", *argv], code, buffer.getvalue().decode(), stderr.getvalue()
    )


@contextlib.contextmanager
def _restored(cwd: Path | None, env: Mapping[str, str] | None) -> Iterator[None]:
    here, environ, path = os.getcwd(), dict(os.environ), list(sys.path)
    modules, title = set(sys.modules), setproctitle.getproctitle()
    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    roots = [] if cwd is None else [Path(cwd).resolve()]
    try:
        if cwd is not None:
            os.chdir(cwd)
        os.environ.update(env or {})
        yield
    finally:
        os.chdir(here)
        os.environ.clear()
        os.environ.update(environ)
        roots += [Path(e).resolve() for e in sys.path if e and e not in path]
        sys.path[:] = path
        for name in set(sys.modules) - modules:
            if name.partition(".")[0] == "lineup":
                continue  # LineUp's own: a second copy of a module would split its classes
            file = getattr(sys.modules[name], "__file__", None)
            if file and any(Path(file).resolve().is_relative_to(r) for r in roots):
                del sys.modules[name]
        setproctitle.setproctitle(title)
        root.handlers[:] = handlers
        root.setLevel(level)
