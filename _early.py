"""Start the zygote before anything heavy is imported (stdlib only, on purpose).

`lineup run` spends ~0.35 s importing the supervisor and ~0.7 s in the zygote's preload; started
first, the zygote preloads while the supervisor imports. The supervisor adopts it (see
`supervisor/_spawn.py`). Must be called from the main thread: PR_SET_PDEATHSIG follows the
parent *thread* of the zygote and of every child it forks.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from typing import Final

__all__ = ["RUNTIME_PRELOAD", "launch_zygote", "take_zygote", "zygote_argv"]

# Modules the zygote imports (besides its own list) before forking the runtime's children.
RUNTIME_PRELOAD: Final = (
    "httpx",
    # What an httpx client imports when it is first created, in the transport and the demo
    # Agent: the connection pool (httpcore: h11, h2, anyio) and the CA bundle's locator.
    "httpcore",
    "certifi",
    "encodings.idna",
    "hypercorn.trio",
    "starlette.applications",
    "markdown_it",
    "lineup.sdk",
    "lineup.miniapps.chat",
    "lineup.ops.devserver.actor",
    "lineup.ops.agent.demo",
)

# At most one early zygote, waiting to be adopted.
_LAUNCHED: list[tuple[subprocess.Popen[bytes], socket.socket, tuple[str, ...]]] = []


def zygote_argv(fd: int) -> list[str]:
    return [sys.executable, "-m", "lineup.supervisor._zygote", str(fd), str(os.getpid())]


def launch_zygote(preload: tuple[str, ...] = RUNTIME_PRELOAD) -> None:
    """Start the zygote now; `take_zygote` hands it to the supervisor later."""
    ours, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    env = dict(os.environ, LINEUP_ZYGOTE_PRELOAD=json.dumps(list(preload)))
    process = subprocess.Popen(
        zygote_argv(theirs.fileno()), pass_fds=(theirs.fileno(),), env=env, stdin=subprocess.DEVNULL
    )
    theirs.close()
    _LAUNCHED.append((process, ours, preload))


def take_zygote(
    preload: tuple[str, ...],
) -> tuple[subprocess.Popen[bytes], socket.socket] | None:
    """The early zygote, if one was started with this preload (once)."""
    if not _LAUNCHED:
        return None
    process, sock, its_preload = _LAUNCHED.pop()
    if its_preload != preload:
        process.kill()
        process.wait()
        sock.close()
        return None
    return process, sock
