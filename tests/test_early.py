"""`lineup run` forks its zygote once it has imported what both need: real processes, each in an
interpreter of its own (the test process has threads of its own, and must not be forked)."""

from __future__ import annotations

import subprocess
import sys
import textwrap

SCRIPT = textwrap.dedent(
    """
    import os, sys, threading, time
    if sys.argv[1] == "thread":
        threading.Thread(target=time.sleep, args=(5,), daemon=True).start()
    from lineup._early import RUNTIME_LANES, RUNTIME_PRELOAD, launch_zygote, take_zygote
    from lineup.actors.kernel import FrameDecoder, parse_frame
    from lineup.supervisor._zygote import lane_preloads
    launch_zygote()
    exits = []
    for modules in lane_preloads(RUNTIME_PRELOAD, RUNTIME_LANES):
        early = take_zygote(modules)
        if early is None:
            print("none")
            sys.exit(0)
        process, sock = early
        decoder = FrameDecoder()
        frames = []
        while not frames:
            frames = decoder.feed(sock.recv(65536))
        body = parse_frame(frames[0]).body
        assert body["type"] == "zygote.ready" and body["pid"] == process.pid, body
        with open(f"/proc/{process.pid}/stat") as stat:
            assert int(stat.read().rsplit(")", 1)[1].split()[1]) == os.getpid()  # parent: us
        sock.close()  # the zygote exits on EOF, and is reaped here
        exits.append(process.wait())
    print("exited", *exits)
    """
)


def run(mode: str) -> str:
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT, mode],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    return result.stdout.strip()


def test_each_zygote_is_forked_from_the_process_it_answers_and_exits_when_closed() -> None:
    assert run("plain") == "exited 0 0"  # the first zygote and the runtime's one lane


def test_a_process_with_a_thread_forks_no_zygote_and_leaves_the_supervisor_to_start_one() -> None:
    assert run("thread") == "none"
