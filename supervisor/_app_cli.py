"""`lineup app install|list|enable|disable|rollback|revoke|remove|default`: the registry of a
running runtime, through its control socket. (`lineup app import-mcp` is `_mcp_import`'s: it
writes into the data dir, for the next `lineup run`.)

Each command is one request to focus (`focus.registry.*`), which owns the registry, over the
channel the supervisor opens for it (`_control.focus_request`); each change is one
`AppOperation`, whose outcome is printed in one line: on stdout when
it completed (`install draw-and-guess 1.0.0: completed`), on stderr when it failed
(`lineup: error: enable x: failed (app_not_installed)`). Exit 0 when the operation completed;
1 when it failed, when SCOPE is no app_scope, when the runtime refused the request, or when no
runtime runs; EXIT_USAGE for a command that cannot be sent as given. Never a traceback.

The authoring commands (`manifest`, `keygen`, `pack`, `verify`, `trust`) are `lineup.sdk.cli`'s:
they need no runtime.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Final, Literal, TextIO

from pydantic import ValidationError

from lineup.actors.focus.messages import (
    RegistryInstallRequest,
    RegistryListRequest,
    RegistryOperateRequest,
)
from lineup.actors.kernel import LineUpError, Message
from lineup.facts.operations import COMPLETED, FAILED
from lineup.sdk.protocol import AppOperationInfo, RegistryAppInfo, RegistryListReply

from ._app_commands import COMMANDS
from ._control import NotRunning, focus_request

__all__ = ["COMMANDS", "main"]

PROG: Final = "lineup app"
EXIT_FAILED: Final = 1
EXIT_USAGE: Final = 64
# How long a command waits for focus: an install downloads, verifies and writes a bundle, and a
# remove waits for the app's instances to close.
REGISTRY_TIMEOUT: Final = 120.0
OperateKind = Literal["enable", "disable", "rollback", "revoke", "remove", "set_default"]
_KINDS: Final[dict[str, OperateKind]] = {
    "enable": "enable",
    "disable": "disable",
    "rollback": "rollback",
    "revoke": "revoke",
    "remove": "remove",
    "default": "set_default",
}

Confirm = Callable[[str], bool]
_APP_SCOPE: Final = re.compile(r"^[a-z][a-z0-9-]{0,62}$")  # the manifest's rule


def _parser(data_dir_default: Path) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROG, description="The registry of a running runtime.")
    sub = parser.add_subparsers(dest="command", required=True)

    def command(name: str, help_text: str) -> argparse.ArgumentParser:
        cmd = sub.add_parser(name, help=help_text)
        cmd.add_argument(
            "--data-dir",
            type=Path,
            default=None,
            help=f"the running runtime's data dir (default: {data_dir_default})",
        )
        cmd.add_argument("--json", action="store_true", help="machine-readable (stable) output")
        return cmd

    install = command("install", "install a signed bundle, or update an installed app to it")
    install.add_argument("source", metavar="FILE|URL", help="a .lineup file or an https:// URL")
    command("list", "the installed apps, their state and their latest operation")
    for name, text in (
        ("enable", "enable an app: its tools join the inventory"),
        ("disable", "disable an app: new calls stop, its live instances wind down"),
        ("rollback", "go back to the app's verified predecessor"),
        ("default", "make an app the one the Shell starts with"),
    ):
        command(name, text).add_argument("app_scope", metavar="SCOPE")
    revoke = command("revoke", "revoke one version of an app (an active one rolls back)")
    revoke.add_argument("app_scope", metavar="SCOPE")
    revoke.add_argument("version", metavar="VERSION")
    remove = command("remove", "remove an app, its bundle, its private data and session data")
    remove.add_argument("app_scope", metavar="SCOPE")
    remove.add_argument("--yes", action="store_true", help="do not ask for confirmation")
    return parser


def main(
    argv: list[str],
    *,
    data_dir_default: Path,
    out: TextIO | None = None,
    err: TextIO | None = None,
    confirm: Confirm | None = None,
) -> int:
    """Run one `lineup app` registry command (`argv` is what follows `lineup app`)."""
    out = out or sys.stdout
    err = err or sys.stderr
    if argv[:1] == ["import-mcp"]:  # into the data dir, running or not (`_mcp_import`)
        from ._mcp_import import main as import_main

        return import_main(argv[1:], data_dir_default=data_dir_default, out=out, err=err)
    args = _parser(data_dir_default).parse_args(argv)
    data_dir: Path = (args.data_dir or data_dir_default).absolute()
    scope = getattr(args, "app_scope", None)
    if scope is not None and not _APP_SCOPE.match(scope):
        err.write(f"lineup: error: {scope!r} is not an app_scope\n")
        return EXIT_FAILED
    try:
        body = _request(args)
    except (ValueError, ValidationError) as exc:
        reason = exc.errors()[0]["msg"] if isinstance(exc, ValidationError) else str(exc)
        err.write(f"{PROG} {args.command}: {reason}\n")
        return EXIT_USAGE
    if args.command == "remove" and not args.yes:
        ask = confirm or _ask_on_terminal
        question = f"Remove {args.app_scope} and its data? [y/N] "
        if not sys.stdin.isatty() and confirm is None:
            err.write(f"{PROG} remove: not on a terminal; confirm with --yes\n")
            return EXIT_USAGE
        if not ask(question):
            err.write(f"{PROG} remove {args.app_scope}: not confirmed\n")
            return EXIT_FAILED
    expect: type[AppOperationInfo | RegistryListReply] = (
        RegistryListReply if isinstance(body, RegistryListRequest) else AppOperationInfo
    )
    try:
        reply = focus_request(data_dir, body, expect, timeout=REGISTRY_TIMEOUT)
    except NotRunning:
        err.write(f"lineup: not running (data dir {data_dir})\n")
        return EXIT_FAILED
    except LineUpError as exc:
        err.write(f"{PROG} {args.command}: refused ({exc.code.value})\n")
        return EXIT_FAILED
    if isinstance(reply, RegistryListReply):
        out.write(_list_json(reply) if args.json else _list_table(reply))
        return 0
    assert isinstance(reply, AppOperationInfo)
    if args.json:
        out.write(json.dumps(reply.model_dump(mode="json", exclude={"type"}), indent=2) + "\n")
    elif reply.state == COMPLETED:
        out.write(outcome_line(reply) + "\n")
    else:
        err.write(f"lineup: error: {outcome_line(reply)}\n")
    return 0 if reply.state == COMPLETED else EXIT_FAILED


def _request(args: argparse.Namespace) -> Message:
    operation_id = f"cli-{uuid.uuid4().hex}"
    if args.command == "install":
        source: str = args.source
        if source.startswith(("https://", "http://")):
            return RegistryInstallRequest(operation_id=operation_id, url=source)
        if "://" in source:
            raise ValueError("a FILE or an https:// URL")
        path = Path(source).expanduser().resolve()
        if not path.is_file():
            raise ValueError(f"no such file: {source}")
        return RegistryInstallRequest(operation_id=operation_id, path=str(path))
    if args.command == "list":
        return RegistryListRequest()
    return RegistryOperateRequest(
        operation_id=operation_id,
        kind=_KINDS[args.command],
        app_scope=args.app_scope,
        version=getattr(args, "version", None),
    )


def _ask_on_terminal(question: str) -> bool:
    try:
        answer = input(question)
    except EOFError:
        return False
    return answer.strip().lower() in {"y", "yes"}


def outcome_line(op: AppOperationInfo) -> str:
    """`install draw-and-guess 1.0.0: completed`, `…: failed (digest_mismatch)`."""
    words = [op.kind, op.app_scope or "-"]
    if op.version:
        words.append(op.version)
    why = f" ({op.code})" if op.state == FAILED and op.code else ""
    return f"{' '.join(words)}: {op.state}{why}"


def _list_json(reply: RegistryListReply) -> str:
    """The stable document: RegistryListReply as JSON, minus the message tags."""
    document = reply.model_dump(mode="json", exclude={"type"})
    for app in document["apps"]:
        app.pop("type", None)
        if app.get("operation"):
            app["operation"].pop("type", None)
    for op in document["operations"]:
        op.pop("type", None)
    for entry in document["catalog"]:  # the local catalog's bundles (`lineup run --catalog`)
        entry.pop("type", None)
    return json.dumps(document, indent=2) + "\n"


_COLUMNS: Final = ("SCOPE", "VERSION", "KIND", "SOURCE", "ENABLED", "STATE", "PREDECESSOR")


def _row(app: RegistryAppInfo) -> tuple[str, ...]:
    op = app.operation
    operation = f"{op.kind} {op.state}" + (f" ({op.code})" if op.code else "") if op else "-"
    return (
        app.app_scope,
        app.version,
        app.kind,
        app.source,
        "yes" if app.enabled else "no",
        app.state,
        app.predecessor or "-",
        operation,
    )


def _list_table(reply: RegistryListReply) -> str:
    header = (*_COLUMNS, "OPERATION")
    rows = [header, *(_row(app) for app in reply.apps)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(header) - 1)]
    lines = [
        "  ".join(cell.ljust(width) for cell, width in zip(row[:-1], widths, strict=True))
        + "  "
        + row[-1]
        for row in rows
    ]
    lines.append(f"default app: {reply.default_app}")
    return "\n".join(lines) + "\n"
