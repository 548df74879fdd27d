"""The `lineup` command: `run` starts the supervised tree, `status` asks a running one, `logs`
prints what one MiniApp wrote to its stdout and stderr.

What the user got wrong (a data dir that is no directory or is not writable, a port that is
taken, a name that is no app_scope) is one line on stderr, `lineup: error: <what>`, and exit
status 1, never a traceback. A port is checked before the tree starts; one taken between that
check and the child's bind ends the same way: the child says so in one line and exits
`EXIT_CANNOT_START`, and the supervisor stops the tree instead of restarting it.
"""

from __future__ import annotations

import argparse
import errno
import fcntl
import getpass
import json
import os
import signal
import socket
import stat
import sys
from pathlib import Path
from typing import Any, BinaryIO, TextIO

import trio

from lineup._early import imports_done
from lineup._logs import configure_logs
from lineup._paths import default_data_dir
from lineup.actors.kernel import ErrorCode, LineUpError
from lineup.actors.kernel.control import (
    SandboxLayer,
    SandboxStatus,
    StatusReply,
    StatusRequest,
)

from ._applog import app_log_path, log_files
from ._control import CONTROL_SOCKET, control_request, read_state_file
from ._quota import STATUS_FSIZE, STATUS_PIDS
from ._restarts import Escalation
from ._runtime import LANES, PRELOAD, RuntimeOptions, plan_runtime
from ._sandbox import missing_layers, probe_layers
from ._spec import Intensity
from ._title import set_title
from ._tree import Supervisor

__all__ = ["default_data_dir", "main"]

EXIT_REFUSED = 1
EXIT_ESCALATED = 2
EXIT_USAGE = 64
PASSWORD_ENV = "LINEUP_PASSWORD"


class PasswordRefused(ValueError):
    """No usable AppServer password: the message says which source, and what to do."""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lineup", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="start the supervised runtime in the foreground")
    run.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help="where the database and control socket live (default: $XDG_DATA_HOME/lineup)",
    )
    run.add_argument(
        "--sqlite-synchronous",
        choices=("normal", "full"),
        default="normal",
        help="normal keeps every commit across a crash; full also across power loss",
    )
    run.add_argument(
        "--max-restarts",
        type=int,
        default=Intensity.max_restarts,
        help="restarts of one child within --restart-period before giving up",
    )
    run.add_argument("--restart-period", type=float, default=Intensity.period)
    defaults = RuntimeOptions(data_dir=Path())
    link = run.add_argument_group("the AppServer link")
    link.add_argument(
        "--appserver",
        metavar="URL",
        default=None,
        help="a real AppServer; without it the reference AppServer and a demo "
        "Agent start on loopback",
    )
    link.add_argument("--user", default=defaults.username, help="AppServer user name")
    link.add_argument(
        "--password-file",
        type=Path,
        default=None,
        metavar="PATH",
        help=f"the AppServer password, read from an owner-only file (mode 0600 or 0400); "
        f"else ${PASSWORD_ENV}, else a prompt on a terminal (default for the embedded "
        f"AppServer: {defaults.password})",
    )
    # Refused, never used: an argument is visible to every local user in /proc/PID/cmdline.
    link.add_argument("--password", default=None, help=argparse.SUPPRESS)
    link.add_argument(
        "--agent-id", default=defaults.agent_id, help="the embedded AppServer's Agent id"
    )
    link.add_argument(
        "--agent-secret",
        default=defaults.agent_secret,
        help="the embedded AppServer's Agent secret",
    )
    link.add_argument(
        "--conversation-id",
        default=defaults.conversation_id,
        help="the embedded AppServer's conversation",
    )
    link.add_argument(
        "--no-demo-agent",
        action="store_true",
        help="leave the Agent side free for another program (`lineup agent`)",
    )
    link.add_argument(
        "--appserver-port",
        type=_port,
        default=0,
        help="port of the embedded AppServer (default: any free one)",
    )
    link.add_argument(
        "--appserver-via",
        metavar="URL",
        default=None,
        help="the transport reaches the AppServer through this URL (a proxy; `lineup drill`)",
    )
    run.add_argument(
        "--shell-port",
        type=_port,
        default=0,
        help="port of the Shell on 127.0.0.1 (default: any free one)",
    )
    run.add_argument(
        "--dev-app",
        type=Path,
        action="append",
        default=[],
        metavar="PATH",
        help="load an unsigned MiniApp package (with its manifest.json) from a folder, "
        "sandboxed and marked as a dev app; repeatable",
    )
    run.add_argument(
        "--catalog",
        type=Path,
        default=None,
        metavar="DIR",
        help="offer the signed bundles of DIR (*.lineup) in the App Registry; its keys "
        "(*.pub) are trusted only with the embedded AppServer (what `make run` uses)",
    )
    run.add_argument(
        "--allow-weak-sandbox",
        action="store_true",
        help="run MiniApps even where this kernel lacks a sandbox layer (unsafe)",
    )

    status = sub.add_parser("status", help="list the running tree's children")
    status.add_argument("--data-dir", type=Path, default=None)
    status.add_argument("--json", action="store_true", help="machine-readable (stable) output")

    logs = sub.add_parser(
        "logs", help="print what a MiniApp wrote to its stdout and stderr (escaped, capped)"
    )
    logs.add_argument("app_scope", metavar="APP_SCOPE", help="e.g. task-dashboard")
    logs.add_argument("--data-dir", type=Path, default=None)

    sub.add_parser("devserver", help="run the reference AppServer alone", add_help=False)
    sub.add_parser("agent", help="act as the Remote Agent against an AppServer", add_help=False)
    sub.add_parser("mcp", help="serve the Agent's side to an MCP client", add_help=False)
    sub.add_parser(
        "drill",
        help="crash-recovery drill: faults on a seeded schedule, then invariants",
        add_help=False,
    )
    sub.add_parser(
        "app",
        help="MiniApp tools (`lineup app new|manifest|keygen|pack|verify|trust`) and the running "
        "runtime's registry (`lineup app install|list|enable|disable|rollback|revoke|remove|"
        "default`)",
        add_help=False,
    )
    return parser


def _port(text: str) -> int:
    port = int(text)
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a port (0..65535)")
    return port


def main(argv: list[str] | None = None) -> None:
    argv = sys.argv[1:] if argv is None else argv
    # The development tools parse their own flags (ops/ is imported only here, by the CLI).
    if argv[:1] == ["devserver"]:
        from lineup.ops.devserver.cli import main as devserver_main

        sys.exit(devserver_main(argv[1:]))
    if argv[:1] == ["app"]:
        from ._app_cli import COMMANDS

        if argv[1:2] and argv[1] in COMMANDS:  # the registry of a running runtime
            from ._app_cli import main as registry_main

            sys.exit(registry_main(argv[1:], data_dir_default=default_data_dir()))
        from lineup.sdk.cli import main as app_main  # the authoring tools: no runtime

        sys.exit(app_main(argv[1:]))
    if argv[:1] == ["drill"]:
        from lineup.ops.drill.cli import main as drill_main

        sys.exit(drill_main(argv[1:]))
    if argv[:1] == ["agent"]:
        from lineup.ops.agent.console import main as agent_main

        sys.exit(agent_main(argv[1:]))
    if argv[:1] == ["mcp"]:
        from lineup.ops.mcp.cli import main as mcp_main

        sys.exit(mcp_main(argv[1:]))
    args = _parser().parse_args(argv)
    data_dir: Path = (args.data_dir or default_data_dir()).absolute()
    if args.command == "run":
        sys.exit(run(data_dir, args))
    if args.command == "logs":
        sys.exit(logs(data_dir, args.app_scope, out=sys.stdout.buffer))
    sys.exit(status(data_dir, as_json=args.json, out=sys.stdout))


# ---------------------------------------------------------------------------------- run


def run(data_dir: Path, args: argparse.Namespace) -> int:
    set_title("supervisor")
    configure_logs("supervisor")
    try:
        lock = _open_data_dir(data_dir)
    except _Refused as exc:
        print(f"lineup: error: {exc}", file=sys.stderr)
        return EXIT_REFUSED
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        print(f"lineup: error: another lineup is running with {data_dir}", file=sys.stderr)
        return 1

    def report(line: str) -> None:
        print(f"lineup: {line}", flush=True)

    try:
        password = appserver_password(args, default=RuntimeOptions(data_dir=data_dir).password)
    except PasswordRefused as exc:
        print(f"lineup: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
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
                appserver_port=args.appserver_port,
                allow_weak_sandbox=args.allow_weak_sandbox,
                dev_apps=tuple(args.dev_app),
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
    try:
        escalation = trio.run(_run_until_signal, supervisor, report)
    finally:
        lock.close()
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


# ---------------------------------------------------------------------------------- status


def status(data_dir: Path, *, as_json: bool, out: TextIO) -> int:
    try:
        reply = control_request(data_dir, StatusRequest(), StatusReply)
    except LineUpError as exc:
        if exc.code is not ErrorCode.ACTOR_UNAVAILABLE:
            raise
        # How the last run ended, if it ended cleanly enough to say (None after a SIGKILL).
        ended = read_state_file(data_dir)
        if as_json:
            document: dict[str, Any] = {"running": False, "data_dir": str(data_dir)}
            document["state"] = ended["state"] if ended is not None else None
            if ended is not None and isinstance(ended.get("at"), int | float):
                document["stopped_at"] = ended["at"]
            out.write(json.dumps(document) + "\n")
        else:
            out.write(f"lineup: not running (data dir {data_dir})\n")
        return 1
    quarantine = _quarantine(Path(reply.data_dir))
    if as_json:
        document = {"running": True, **reply.model_dump(mode="json", exclude={"type"})}
        document["quarantine"] = quarantine
        for child in document["children"]:
            child.pop("type", None)
        if document.get("runtime"):
            document["runtime"].pop("type", None)
        out.write(json.dumps(document, indent=2) + "\n")
        return 0
    out.write(
        f"lineup {reply.state}, pid {reply.pid}, up {reply.uptime_s:.1f} s, "
        f"data dir {reply.data_dir}\n"
    )
    width = max([len("NAME"), *(len(child.name) for child in reply.children)]) + 2
    out.write(f"{'NAME':<{width}}{'KIND':<12}{'PID':>8}  {'STATE':<11}{'RESTARTS':>8}  UPTIME\n")
    for child in reply.children:
        uptime = f"{child.uptime_s:.1f} s" if child.uptime_s is not None else "-"
        out.write(
            f"{child.name:<{width}}{child.kind:<12}{child.pid or '-':>8}  {child.state:<11}"
            f"{child.restarts:>8}  {uptime}\n"
        )
    if reply.runtime is not None:
        why = f" ({reply.runtime.reason})" if reply.runtime.reason else ""
        out.write(f"runtime: {reply.runtime.state}{why}\n")
    if reply.zygote_pid is not None:
        out.write(f"zygote: pid {reply.zygote_pid}\n")
    if reply.sandbox is not None:
        out.write(f"sandbox: {_sandbox_line(reply.sandbox)}\n")
    quotas = (STATUS_FSIZE, STATUS_PIDS)
    if any(key in reply.info for key in quotas):
        fsize, pids = (reply.info.get(key, "unknown") for key in quotas)
        out.write(f"quotas: fsize {fsize}, pids cgroup {pids}\n")
    for key, value in sorted(reply.info.items()):
        if key not in quotas:
            out.write(f"{key}: {value}\n")
    if quarantine["count"]:
        kinds = ", ".join(f"{kind} {n}" for kind, n in quarantine["kinds"].items())
        out.write(f"quarantined: {quarantine['count']} ({kinds})\n")
    return 0


def _quarantine(data_dir: Path) -> dict[str, Any]:
    """What the store quarantined (its dead letters: a count and kinds, never content), from
    the summary it keeps in the data dir; nothing when there is none or it cannot be read."""
    # Here, not at the top: the module is the store's messages, which `lineup run` never needs.
    from lineup.actors.store.dead_letters.messages import QUARANTINE_SUMMARY_FILE

    try:
        raw = json.loads((data_dir / QUARANTINE_SUMMARY_FILE).read_text())
        count, kinds = raw["count"], raw["kinds"]
        if type(count) is int and all(type(n) is int for n in kinds.values()):
            return {"count": count, "kinds": {str(k): n for k, n in sorted(kinds.items())}}
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        pass
    return {"count": 0, "kinds": {}}


def _sandbox_line(sandbox: SandboxStatus) -> str:
    """`netns on, landlock on (abi 6, network, scopes), …, seccomp on (audit); missing: none`."""
    landlock, seccomp = sandbox.landlock, sandbox.seccomp
    layers: list[tuple[str, SandboxLayer, list[str]]] = [
        ("netns", sandbox.netns, []),
        (
            "landlock",
            landlock,
            [f"abi {landlock.abi}"] + ["network"] * landlock.network + ["scopes"] * landlock.scopes,
        ),
        ("rlimits", sandbox.rlimits, []),
        ("capabilities", sandbox.capabilities, []),
        ("seccomp", seccomp, ["audit"] * seccomp.audit),
    ]
    parts = [
        f"{name} {'on' if layer.available else 'MISSING'}"
        + (f" ({', '.join(details)})" if details else "")
        for name, layer, details in layers
    ]
    return f"{', '.join(parts)}; missing: {', '.join(sandbox.missing) or 'none'}"


# ---------------------------------------------------------------------------------- logs


def logs(data_dir: Path, app_scope: str, *, out: BinaryIO) -> int:
    """Print `<data dir>/logs/<app_scope>.log`, its rotated part first. The lines were escaped
    when written, so they are safe on a terminal as they are. Exit 1 when there is no log."""
    try:
        path = app_log_path(data_dir, app_scope)
    except LineUpError:
        print(f"lineup: error: {app_scope!r} is not an app_scope", file=sys.stderr)
        return EXIT_REFUSED
    if data_dir.exists() and not data_dir.is_dir():
        print(f"lineup: error: --data-dir {data_dir}: not a directory", file=sys.stderr)
        return EXIT_REFUSED
    found = False
    try:
        for part in log_files(path):
            try:
                with part.open("rb") as file:
                    found = True
                    while chunk := file.read(65536):
                        out.write(chunk)
            except (FileNotFoundError, NotADirectoryError):
                continue
            except OSError as exc:
                print(f"lineup: error: {part}: {exc.strerror}", file=sys.stderr)
                return EXIT_REFUSED
        out.flush()
    except BrokenPipeError:  # `lineup logs x | head`: quietly, even at exit's flush
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    if not found:
        print(f"lineup: no log for {app_scope} in {path.parent}", file=sys.stderr)
        return 1
    return 0
