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
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, TextIO

# Each command imports what it needs when it runs, not when this module loads: every `lineup`
# command is an interpreter of its own, and the tree's modules (trio, the messages, the
# supervisor) were most of what `lineup app ...` or `lineup status` spent before doing anything.
from lineup._paths import default_data_dir

from ._app_commands import COMMANDS as APP_REGISTRY_COMMANDS

if TYPE_CHECKING:
    from lineup.actors.kernel.control import SandboxStatus

__all__ = ["default_data_dir", "main"]


def _parser(argv: list[str]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="lineup", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)

    run = sub.add_parser("run", help="start the supervised runtime in the foreground")
    if argv[:1] == ["run"]:  # its options need the runtime's modules: only when it runs
        _add_run_arguments(run)

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
        "default`); `lineup app import-mcp CONFIG.json` imports a desktop host's mcpServers",
        add_help=False,
    )
    return parser


def _add_run_arguments(run: argparse.ArgumentParser) -> None:
    from ._run_cli import PASSWORD_ENV
    from ._runtime import RuntimeOptions
    from ._spec import Intensity

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
        help="port of the Shell on 127.0.0.1 (default: the one the data dir's last run used, "
        "else any free one)",
    )
    run.add_argument(
        "--new-token",
        action="store_true",
        help="give the Shell a new access token (tabs open with the old one must open the "
        "new link); otherwise the data dir's token is used again",
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
        "--dev-mcp",
        nargs="?",
        const=Path(),
        default=None,
        type=Path,
        metavar="DIR",
        help="run the MCP server whose command follows `--` from its folder DIR (default: the "
        "current directory) as an unsigned app, sandboxed and marked dev: `lineup run "
        "--dev-mcp -- python server.py`",
    )
    run.add_argument("mcp_command", nargs="*", metavar="-- COMMAND ARGS", help=argparse.SUPPRESS)
    run.add_argument(
        "--allow-weak-sandbox",
        action="store_true",
        help="run MiniApps even where this kernel lacks a sandbox layer (unsafe)",
    )


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
        if argv[1:2] == ["pack-mcp"]:  # it lists the server in the sandbox: the supervisor's
            from ._pack_mcp import main as pack_mcp_main

            sys.exit(pack_mcp_main(argv[2:]))
        if argv[1:2] and argv[1] in APP_REGISTRY_COMMANDS:  # the registry of a running runtime
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
    args = _parser(argv).parse_args(argv)
    data_dir: Path = (args.data_dir or default_data_dir()).absolute()
    if args.command == "run":
        from ._run_cli import run

        sys.exit(run(data_dir, args))
    if args.command == "logs":
        sys.exit(logs(data_dir, args.app_scope, out=sys.stdout.buffer))
    sys.exit(status(data_dir, as_json=args.json, out=sys.stdout))


# ---------------------------------------------------------------------------------- status


def status(data_dir: Path, *, as_json: bool, out: TextIO) -> int:
    from lineup.actors.kernel import ErrorCode, LineUpError
    from lineup.actors.kernel.control import StatusReply, StatusRequest

    from ._control import control_request, read_state_file
    from ._quota import STATUS_FSIZE, STATUS_PIDS

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
    from lineup.actors.kernel.control import SandboxLayer

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
    when written, so they are safe on a terminal as they are. With no log, exit 0 if the app
    runs now (it has printed nothing yet, and says so on stderr), else 1."""
    from lineup.actors.kernel import LineUpError

    from ._applog import app_log_path, log_files
    from ._exits import EXIT_REFUSED

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
        if _app_running(data_dir, app_scope):
            # Its log is made at its first line: a running app that printed nothing has none.
            print(f"lineup: {app_scope} is running and has printed no output yet", file=sys.stderr)
            return 0
        print(f"lineup: no log for {app_scope} in {path.parent}", file=sys.stderr)
        return 1
    return 0


def _app_running(data_dir: Path, app_scope: str) -> bool:
    """Whether the runtime on `data_dir` runs `app_scope`'s process now (False when no runtime
    answers there)."""
    from lineup.actors.kernel import ErrorCode, LineUpError
    from lineup.actors.kernel.control import StatusReply, StatusRequest

    from ._control import control_request

    try:
        reply = control_request(data_dir, StatusRequest(), StatusReply)
    except LineUpError as exc:
        if exc.code is not ErrorCode.ACTOR_UNAVAILABLE:
            raise
        return False
    name = f"miniapp:{app_scope}"
    return any(child.name == name and child.state == "running" for child in reply.children)
