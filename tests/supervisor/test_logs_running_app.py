"""`lineup logs APP` for an app that runs and has printed nothing (issue 28, item 12): a real
`lineup run` and the real CLI. An app's log is made at its first line, so a quiet app has none:
that is no output yet (exit 0), not a missing log; an app that does not run still has no log
(exit 1)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import trio

from lineup.supervisor._applog import app_log_path
from lineup.tests.support.process import lineup_status, start_lineup_run


async def logs(data_dir: Path, scope: str) -> subprocess.CompletedProcess[bytes]:
    command = [sys.executable, "-m", "lineup", "logs", scope, "--data-dir", str(data_dir)]
    with trio.fail_after(30):
        return await trio.run_process(
            command, capture_stdout=True, capture_stderr=True, check=False
        )


async def test_logs_of_a_running_app_that_printed_nothing_says_so_and_exits_0(
    data_dir: Path,
) -> None:
    process = await start_lineup_run(data_dir)
    try:
        children = lineup_status(data_dir)["children"]
        assert isinstance(children, list)
        assert {"name": "miniapp:chat", "state": "running"}.items() <= next(
            c for c in children if c["name"] == "miniapp:chat"
        ).items()
        assert not app_log_path(data_dir, "chat").exists()  # the chat printed nothing

        quiet = await logs(data_dir, "chat")
        assert quiet.returncode == 0
        assert quiet.stdout == b""  # nothing to pipe on
        assert b"no output yet" in quiet.stderr
        assert b"no log for" not in quiet.stderr

        # An app the runtime does not run (never opened): still no log, exit 1.
        absent = await logs(data_dir, "whiteboard")
        assert absent.returncode == 1
        assert absent.stdout == b""
        assert absent.stderr.startswith(b"lineup: no log for whiteboard")
    finally:
        process.kill()
        await process.wait()

    # The runtime gone, the chat runs no more: its missing log is a missing log again.
    stopped = await logs(data_dir, "chat")
    assert stopped.returncode == 1
    assert stopped.stderr.startswith(b"lineup: no log for chat")
