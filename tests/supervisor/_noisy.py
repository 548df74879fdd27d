"""A MiniApp-kind actor that writes what a hostile or careless app would to its stdout and stderr.

Once ready it floods stdout (`flood` lines dense with terminal escape sequences), then writes the
lines the test looks for: escapes on both streams, an over-long line, bytes that are not UTF-8,
a line without its newline, and exits. The test reads them back from the app's log.
"""

from __future__ import annotations

import os
import sys

import trio

from lineup.actors.kernel import Actor, ActorKind

CLEAR_SCREEN = "\x1b[2J"
MARK = "noisy-mark"  # in every line this actor writes, so a test can look for any of them
LONG_LINE = 10_000


def write_everything(flood: int) -> None:
    for n in range(flood):
        print(f"{MARK} flood {n:06d} " + CLEAR_SCREEN * 50)
    print(f"{MARK} \x1b[31mred\x1b[0m bell\x07 back\\slash")
    print(f"{MARK} title \x1b]0;pwned\x07 on stderr", file=sys.stderr)
    print(f"{MARK} bidi \u202eevil\u202c and \u00e9t\u00e9")  # an override; plain accents
    print(f"{MARK} long " + "a" * LONG_LINE)
    sys.stdout.flush()
    sys.stdout.buffer.write(f"{MARK} bytes ".encode() + b"\xff\xfe\r\n")
    sys.stdout.buffer.write(f"{MARK} last, no newline".encode())
    sys.stdout.flush()
    sys.stderr.flush()


class NoisyActor(Actor):
    kind = ActorKind.MINIAPP

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        # In a worker thread, so the loop tells the supervisor it is ready meanwhile.
        await trio.to_thread.run_sync(write_everything, int(self.ctx.config.get("flood", 0)))
        os._exit(0)  # done: the test waits for this exit, then for the last line's capture
