"""A hostile MiniApp-kind actor: it tries to leave its sandbox every way the tests name.

It runs each attack in `run()`, before it reports ready, and writes what each one got (`"ok"`,
an errno name, or an exception class name) to `outcomes.json` in its private data directory,
the one place it may write; the test reads that file once the actor is ready. The config says
what to aim at: `target_pid` (the test's own process), `tcp_port` and `udp_port` (listeners the
test opened on 127.0.0.1), `abstract` (an abstract Unix socket name the test listens on),
`attack: "spin"` to burn CPU instead, until RLIMIT_CPU kills it, `flood: N` to make N denied
calls in a row instead (what each got, counted, and how long they took), `attack: "fill"` to
write one file as large as it can in its data dir (`fill`: what the write past the limit got,
`fill_bytes`: how much it wrote), and `attack: "threads"` to start as many threads as it can,
up to `threads` (`threads`: what the one past the limit got, `threads_started`: how many).

Every attack is harmless if it succeeds (signal 0, reading a limit, a no-op renice...): the test
fails on the outcome, not on damage.
"""

from __future__ import annotations

import ctypes
import errno
import json
import os
import resource
import socket
import subprocess
import termios
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import trio

from lineup.actors.kernel import Actor, ActorKind, Envelope, Message, handles
from lineup.supervisor._sandbox import app_data_dir

OUTCOMES = "outcomes.json"
_NO_ECHO: list[int | list[int]] = [0, 0, 0, 0, 0, 0, [0] * 32]  # what it would set: echo off
_libc = ctypes.CDLL(None, use_errno=True)
_PTRACE_ATTACH = 16
_SYS_IO_URING_SETUP = 425
_CLONE_NEWUSER = 0x10000000


class SandboxedPingRequest(Message):
    """router → miniapp: proves an introduced channel works and a worker thread can start."""

    type: Literal["miniapp.test_sandboxed_ping"] = "miniapp.test_sandboxed_ping"


class SandboxedPingReply(Message):
    type: Literal["miniapp.test_sandboxed_ping.reply"] = "miniapp.test_sandboxed_ping.reply"
    pid: int
    thread_result: int


def _outcome(attack: Callable[[], object]) -> str:
    try:
        attack()
    except OSError as exc:
        return errno_name(exc.errno)
    except Exception as exc:  # MemoryError and the like: the class is the outcome
        return type(exc).__name__
    return "ok"


def errno_name(number: int | None) -> str:
    return errno.errorcode.get(number or 0, str(number))


def _termios(call: Callable[[], object]) -> Callable[[], object]:
    def attempt() -> object:
        try:
            return call()
        except termios.error as exc:  # not an OSError: its first argument is the errno
            raise OSError(exc.args[0], str(exc.args[-1])) from None

    return attempt


def _libc_call(result: int) -> None:
    if result < 0:
        number = ctypes.get_errno()
        raise OSError(number, os.strerror(number))


class HostileActor(Actor):
    kind = ActorKind.MINIAPP

    @property
    def home(self) -> Path:
        policy = self.ctx.config["sandbox"]
        return app_data_dir(policy.get("data_dir") or self.ctx.data_dir, policy["app_scope"])

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        if self.ctx.config.get("attack") == "spin":
            task_status.started()
            while True:  # pure CPU, never yields: only RLIMIT_CPU can end it
                pass
        flood = self.ctx.config.get("flood")
        attack = self.ctx.config.get("attack")
        if attack == "fill":
            outcomes = self.fill()
        elif attack == "threads":
            outcomes = self.threads(int(self.ctx.config.get("threads", 3000)))
        else:
            outcomes = self.flood(int(flood)) if flood else self.attacks()
        try:
            await trio.to_thread.run_sync(lambda: None)
            outcomes["thread"] = "ok"
        except Exception as exc:
            outcomes["thread"] = type(exc).__name__
        temporary = self.home / f"{OUTCOMES}.tmp"
        temporary.write_text(json.dumps(outcomes))
        temporary.rename(self.home / OUTCOMES)
        task_status.started()
        await trio.sleep_forever()

    def attacks(self) -> dict[str, str]:
        config: dict[str, Any] = self.ctx.config
        target = int(config["target_pid"])
        data_dir = self.ctx.data_dir
        lineup_root = Path(__file__).resolve().parents[2]
        memory_mb = int(config["sandbox"].get("memory_mb", 512))

        def tcp_connect() -> None:
            socket.create_connection(("127.0.0.1", config["tcp_port"]), timeout=2).close()

        def udp_send() -> None:
            with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as udp:
                udp.sendto(b"escaped", ("127.0.0.1", config["udp_port"]))

        def unix_connect(address: str) -> Callable[[], None]:
            def connect() -> None:
                with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as unix:
                    unix.settimeout(2)
                    unix.connect(address)

            return connect

        def write(path: Path) -> Callable[[], None]:
            def attempt() -> None:
                with open(path, "a") as file:  # the open() call is the attack
                    file.write("escaped\n")

            return attempt

        def read(path: str | Path) -> Callable[[], object]:
            return lambda: Path(path).read_bytes()

        def fork() -> None:
            pid = os.fork()
            if pid == 0:
                os._exit(0)
            os.waitpid(pid, 0)

        def write_home() -> None:
            path = self.home / "notes" / "mine.txt"
            path.parent.mkdir(exist_ok=True)
            path.write_text("mine")
            path.rename(path.with_suffix(".kept"))
            assert path.with_suffix(".kept").read_text() == "mine"

        def stream_socketpair() -> None:
            for end in socket.socketpair():
                end.close()

        attacks: dict[str, Callable[[], object]] = {
            "tcp_connect": tcp_connect,
            "udp_send": udp_send,
            "control_socket": unix_connect(str(data_dir / "control.sock")),
            "abstract_socket": unix_connect("\0" + str(config["abstract"])),
            "datagram_socketpair": lambda: socket.socketpair(socket.AF_UNIX, socket.SOCK_DGRAM),
            "read_database": read(data_dir / "lineup.db"),
            "read_passwd": read("/etc/passwd"),
            "write_passwd": write(Path("/etc/passwd")),
            "write_data_dir": write(data_dir / "escaped.txt"),
            "write_code": write(lineup_root / "escaped.txt"),
            "write_tmp": write(Path("/tmp/lineup-escaped.txt")),
            "read_environ": read(f"/proc/{target}/environ"),
            "kill": lambda: os.kill(target, 0),
            "ptrace": lambda: _libc_call(_libc.ptrace(_PTRACE_ATTACH, target, None, None)),
            "prlimit_other": lambda: resource.prlimit(target, resource.RLIMIT_NOFILE),
            "renice_other": lambda: os.setpriority(os.PRIO_PROCESS, target, 0),
            "fork": fork,
            "subprocess": lambda: subprocess.run(["/bin/true"], check=True),
            "unshare_user": lambda: _libc_call(_libc.unshare(_CLONE_NEWUSER)),
            "io_uring": lambda: _libc_call(_libc.syscall(_SYS_IO_URING_SETUP, 1, None)),
            "chown": lambda: os.chown(self.home, 1, 1),
            "memory": lambda: bytearray((memory_mb + 64) << 20),
            "write_home": write_home,
            "stream_socketpair": stream_socketpair,
            # Finding 9: it reads what it runs, nothing else of the repository.
            "read_git": read(lineup_root / ".git" / "config")
            if (lineup_root / ".git").is_dir()
            else read(lineup_root / ".git"),  # a worktree's .git is a file
            "list_root": lambda: os.listdir(lineup_root),
            "list_tests": lambda: os.listdir(lineup_root / "tests"),
            "list_ops": lambda: os.listdir(lineup_root / "ops"),
            "read_ops": read(lineup_root / "ops" / "__init__.py"),
            "read_other_actor": read(lineup_root / "actors" / "store" / "_actor.py"),
            "read_supervisor": read(lineup_root / "supervisor" / "_sandbox.py"),
            "read_other_app": read(lineup_root / "miniapps" / "chat" / "__init__.py"),
            "read_sdk": read(lineup_root / "sdk" / "__init__.py"),
            "read_kernel": read(lineup_root / "actors" / "kernel" / "bus.py"),
            "read_own_code": read(Path(__file__)),
            # Finding 8: no terminal, whatever the runtime's own stdio is.
            "write_stdout": lambda: os.write(1, b"lineup: forged by the app\x1b]0;owned\x07\n"),
            "open_tty": lambda: os.open("/dev/tty", os.O_RDWR),
            "tcgetattr_stdin": _termios(lambda: termios.tcgetattr(0)),
            "tcgetattr_stdout": _termios(lambda: termios.tcgetattr(1)),
            "tcgetattr_stderr": _termios(lambda: termios.tcgetattr(2)),
            "tcsetattr_stdout": _termios(lambda: termios.tcsetattr(1, termios.TCSANOW, _NO_ECHO)),
        }
        outcomes = {name: _outcome(attack) for name, attack in attacks.items()}
        outcomes["secret_in_environment"] = str("LINEUP_TEST_SECRET" in os.environ)
        outcomes["isatty"] = ",".join(str(os.isatty(fd)) for fd in (0, 1, 2))
        return outcomes

    def flood(self, count: int) -> dict[str, str]:
        got: dict[str, int] = {}
        started = time.monotonic()
        for _ in range(count):
            outcome = _outcome(socket.socket)
            got[outcome] = got.get(outcome, 0) + 1
        took = time.monotonic() - started
        return {
            "flood": ", ".join(f"{name} x{n}" for name, n in sorted(got.items())),
            "flood_seconds": f"{took:.3f}",
        }

    def fill(self) -> dict[str, str]:
        written = 0
        chunk = b"x" * (1 << 20)
        outcome = "ok"
        try:
            with open(self.home / "fill.bin", "wb", buffering=0) as file:
                for _ in range(4096):  # 4 GiB, were nothing to stop it
                    written += file.write(chunk) or 0
        except OSError as exc:
            outcome = errno_name(exc.errno)
        return {"fill": outcome, "fill_bytes": str(written)}

    def threads(self, count: int) -> dict[str, str]:
        release = threading.Event()
        started: list[threading.Thread] = []
        outcome = "ok"
        try:
            for _ in range(count):
                thread = threading.Thread(target=release.wait, daemon=True)
                thread.start()
                started.append(thread)
        except RuntimeError as exc:  # "can't start new thread": clone() failed EAGAIN
            outcome = type(exc).__name__
        finally:
            release.set()
            for thread in started:
                thread.join()
        return {"threads": outcome, "threads_started": str(len(started))}

    @handles(SandboxedPingRequest)
    async def on_ping(self, msg: SandboxedPingRequest, env: Envelope) -> SandboxedPingReply:
        result = await trio.to_thread.run_sync(lambda: 6 * 7)
        return SandboxedPingReply(pid=os.getpid(), thread_result=result)
