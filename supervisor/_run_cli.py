"""`lineup run`: the data dir made private and held for the run, the AppServer password taken
(never from argv), the ports checked, then the supervised tree run in the foreground until a
signal stops it or it escalates. What the user got wrong is one line on stderr and exit status
1 (`EXIT_REFUSED`), never a traceback; an escalation is exit status 2.
"""

from __future__ import annotations

import argparse
import errno
import fcntl
import getpass
import os
import signal
import socket
import stat
import sys
from pathlib import Path
from typing import Any, BinaryIO

import trio

from lineup._early import imports_done
from lineup._logs import configure_logs

from ._control import CONTROL_SOCKET
from ._exits import EXIT_ESCALATED, EXIT_REFUSED, EXIT_USAGE
from ._mcp_probe import ProbeFailed
from ._mcp_probe import dev_mcp as _dev_mcp
from ._restarts import Escalation
from ._runtime import LANES, PRELOAD, RuntimeOptions, plan_runtime
from ._sandbox import missing_layers, probe_layers
from ._spec import Intensity
from ._title import set_title
from ._tree import Supervisor

__all__ = [
    "EXIT_ESCALATED",
    "EXIT_REFUSED",
    "EXIT_USAGE",
    "PASSWORD_ENV",
    "PasswordRefused",
    "appserver_password",
    "run",
]

PASSWORD_ENV = "LINEUP_PASSWORD"


class PasswordRefused(ValueError):
    """No usable AppServer password: the message says which source, and what to do."""


def run(data_dir: Path, args: argparse.Namespace) -> int:
    set_title("supervisor")
    configure_logs("supervisor")
    try:
        lock = _open_data_dir(data_dir)
    except _Refused as exc:
        print(f"lineup: error: {exc}", file=sys.stderr)
        return EXIT_REFUSED
    with lock:  # closed on every way out: a refusal below as much as the end of the run
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            print(f"lineup: error: another lineup is running with {data_dir}", file=sys.stderr)
            return 1
        return _run_held(data_dir, args)


def _run_held(data_dir: Path, args: argparse.Namespace) -> int:
    """`run`, once the data dir's lock is held."""

    def report(line: str) -> None:
        print(f"lineup: {line}", flush=True)

    try:
        password = appserver_password(args, default=RuntimeOptions(data_dir=data_dir).password)
    except PasswordRefused as exc:
        print(f"lineup: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    dev_mcp = _dev_mcp_apps(args, data_dir)
    if isinstance(dev_mcp, int):
        return dev_mcp
    try:
        plan = plan_runtime(
            RuntimeOptions(
                data_dir=data_dir,
                sqlite_synchronous=args.sqlite_synchronous,
                appserver=args.appserver,
                username=args.user,
                password=password,
                agent_id=args.agent_id,
                agent_secret=args.agent_secret,
                conversation_id=args.conversation_id,
                demo_agent=not args.no_demo_agent,
                shell_port=args.shell_port,
                new_token=args.new_token,
                appserver_port=args.appserver_port,
                allow_weak_sandbox=args.allow_weak_sandbox,
                dev_apps=tuple(args.dev_app),
                extra_apps=dev_mcp,
                catalog=args.catalog,
                appserver_via=args.appserver_via,
            )
        )
    except ValueError as exc:  # a --dev-app folder that is not a MiniApp package
        print(f"lineup: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    ports = {"--shell-port": args.shell_port}
    if args.appserver is None:  # the embedded AppServer listens on it
        ports["--appserver-port"] = args.appserver_port
    for flag, port in ports.items():
        taken = _port_taken(port) if port else None
        if taken is not None:
            print(f"lineup: error: {flag} {port}: 127.0.0.1:{port} {taken}", file=sys.stderr)
            return EXIT_REFUSED
    supervisor = Supervisor(
        plan.specs,
        data_dir=data_dir,
        report=report,
        intensity=Intensity(max_restarts=args.max_restarts, period=args.restart_period),
        preload=PRELOAD,
        lanes=LANES,
        link_wait=plan.link_wait,
    )
    supervisor.info.update(plan.info)
    if dev_mcp:
        supervisor.info["dev_mcp"] = dev_mcp[0]["app_scope"]
    supervisor.allow_weak_sandbox = args.allow_weak_sandbox
    layers = probe_layers()
    missing = missing_layers(layers)  # seccomp_audit is reported, never required
    if missing:
        weak = (
            "running MiniApps anyway (--allow-weak-sandbox)"
            if args.allow_weak_sandbox
            else ("MiniApps will not start; --allow-weak-sandbox runs them anyway")
        )
        print(
            f"lineup: WARNING: this kernel lacks sandbox layers {', '.join(missing)}: {weak}",
            file=sys.stderr,
            flush=True,
        )
    imports_done()  # the collector, paused for them, runs again (see `lineup._early`)
    report(f"starting (pid {os.getpid()}, data dir {data_dir})")
    for note in plan.notes:
        report(note)
    escalation = trio.run(_run_until_signal, supervisor, report)
    if escalation is not None and escalation.reported:
        return EXIT_REFUSED  # the child that cannot start said why, in one line
    if escalation is not None:
        print(f"lineup: error: {escalation.message}", file=sys.stderr, flush=True)
        return EXIT_ESCALATED
    report("stopped")
    return 0


MAX_UNIX_PATH = 107  # sun_path's 108 bytes, with the NUL


class _Refused(Exception):
    """What the user must fix before the runtime can start, in words (one line)."""


def _open_data_dir(data_dir: Path) -> BinaryIO:
    """Create `data_dir` (0700) if need be and open its lock file, to hold for the run.
    Raises _Refused: not a directory, cannot be created, made private or written."""
    if data_dir.exists() and not data_dir.is_dir():
        raise _Refused(f"--data-dir {data_dir}: not a directory")
    if len(os.fsencode(data_dir / CONTROL_SOCKET)) > MAX_UNIX_PATH:
        raise _Refused(
            f"--data-dir {data_dir}: too long for its control socket "
            f"(a Unix socket path has at most {MAX_UNIX_PATH} bytes)"
        )
    step = "cannot create it"
    try:
        data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
        step = "cannot make it owner-only (chmod 700)"
        data_dir.chmod(0o700)
        step = "cannot write in it"
        return open(data_dir / "lineup.lock", "wb")  # held for the whole run
    except OSError as exc:
        where = f" ({exc.filename})" if exc.filename and Path(exc.filename) != data_dir else ""
        raise _Refused(f"--data-dir {data_dir}: {step}: {exc.strerror}{where}") from None


def _dev_mcp_apps(args: argparse.Namespace, data_dir: Path) -> tuple[dict[str, str], ...] | int:
    """`--dev-mcp -- COMMAND…`'s registry entry (none without it), or the exit status of a
    refusal, said in one line."""
    if args.mcp_command and args.dev_mcp is None:
        print("lineup: error: a command after `--` needs --dev-mcp", file=sys.stderr)
        return EXIT_USAGE
    if args.dev_mcp is None:
        return ()
    try:
        entry = _dev_mcp(args.dev_mcp, list(args.mcp_command), data_dir)
    except ProbeFailed as exc:
        print(f"lineup: error: --dev-mcp: {exc}", file=sys.stderr)
        return EXIT_REFUSED
    # What the app goes without, a line each, for the developer at the terminal.
    for item in entry.get("refused", "").split():
        name, _, reason = item.rpartition(":")
        print(f"lineup: --dev-mcp: tool {name} left out ({reason})", file=sys.stderr)
    for item in entry.get("ui_refused", "").split():
        uri, _, reason = item.rpartition(":")
        print(f"lineup: --dev-mcp: no UI from {uri} ({reason}); its tools stay", file=sys.stderr)
    return (entry,)


def _port_taken(port: int) -> str | None:
    """Why 127.0.0.1:`port` cannot be listened on now (None: it can). Bound as hypercorn
    binds (SO_REUSEADDR), so a port in TIME_WAIT is not called taken."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("127.0.0.1", port))
        except OSError as exc:
            if exc.errno == errno.EADDRINUSE:
                return "is taken by another program"
            return f"cannot be listened on ({exc.strerror})"
    return None


def appserver_password(args: argparse.Namespace, *, default: str) -> str:
    """The AppServer password, from (in this order) `--password-file`, `$LINEUP_PASSWORD`
    (removed from the environment once read, so no child inherits it), a prompt when stdin is
    a terminal and a real AppServer is named, or `default` (the embedded AppServer's). Never
    from argv. Raises PasswordRefused: `--password` given, a file that is not owner-only (or
    not ours, or not a regular file), or a real AppServer with no password from anywhere."""
    if args.password is not None:
        raise PasswordRefused(
            "--password is visible to every local user (in /proc/PID/cmdline); use "
            f"--password-file PATH (mode 0600), ${PASSWORD_ENV}, or the prompt on a terminal"
        )
    if args.password_file is not None:
        return _read_password_file(args.password_file)
    from_env = os.environ.pop(PASSWORD_ENV, None)
    if from_env:
        return from_env
    if args.appserver is None:
        return default
    if sys.stdin.isatty():
        return getpass.getpass(f"AppServer password for {args.user}: ")
    raise PasswordRefused(
        f"no AppServer password: use --password-file PATH (mode 0600) or ${PASSWORD_ENV}"
    )


def _read_password_file(path: Path) -> str:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError as exc:
        raise PasswordRefused(f"--password-file {path}: {exc.strerror}") from None
    with open(fd, "rb") as file:
        info = os.fstat(file.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise PasswordRefused(f"--password-file {path}: not a regular file")
        if info.st_uid != os.getuid() or info.st_mode & 0o077:
            raise PasswordRefused(
                f"--password-file {path} must be owner-only (chmod 600); it is "
                f"{stat.S_IMODE(info.st_mode):04o}, owned by uid {info.st_uid}"
            )
        raw = file.read(MAX_PASSWORD_FILE + 1)
    if len(raw) > MAX_PASSWORD_FILE:
        raise PasswordRefused(f"--password-file {path}: longer than {MAX_PASSWORD_FILE} bytes")
    password = raw.decode("utf-8", "replace").rstrip("\r\n")
    if not password:
        raise PasswordRefused(f"--password-file {path} is empty")
    return password


MAX_PASSWORD_FILE = 4096


async def _run_until_signal(supervisor: Supervisor, report: Any) -> Escalation | None:
    """Run the tree until SIGINT/SIGTERM (clean stop) or an escalation (returned)."""
    escalation: Escalation | None = None
    with trio.open_signal_receiver(signal.SIGINT, signal.SIGTERM, signal.SIGHUP) as signals:
        async with trio.open_nursery() as nursery:

            async def supervise(*, task_status: trio.TaskStatus[None]) -> None:
                nonlocal escalation
                try:
                    await supervisor.run(task_status=task_status)
                except Escalation as exc:
                    escalation = exc
                finally:
                    nursery.cancel_scope.cancel()

            async def on_signal() -> None:
                async for signum in signals:
                    report(f"stopping on {signal.Signals(signum).name}")
                    nursery.cancel_scope.cancel()
                    return

            nursery.start_soon(on_signal)
            try:
                await nursery.start(supervise)
            except RuntimeError:
                return escalation  # it escalated before it was ever ready
            report(f"open the Shell: {supervisor.info['shell_url']}")
            if "appserver_url" in supervisor.info:
                report(f"reference AppServer: {supervisor.info['appserver_url']}")
            if "catalog" in supervisor.info:
                report(f"catalog: {supervisor.info['catalog']} (in the App Registry)")
    return escalation
