"""`lineup app manifest PATH [--out FILE] [--class module:Class]`: a MiniApp's manifest as JSON;
the bundle commands `keygen`, `pack`, `verify` and `trust` (`lineup.sdk._bundle_cli`); and
`new NAME [--surface] [--dir DIR]`, a new MiniApp package (`lineup.sdk._scaffold`).

PATH is a MiniApp package folder inside an importable package (`miniapps/task_dashboard`), a
module file, or a dotted module name (`lineup.miniapps.task_dashboard`). The command imports
it, takes the one `MiniApp` subclass with an `app_info` (or the one `--class` names), and prints
its `lineup.app.v1` manifest (sorted keys, 2-space indent) or writes it to `--out`. A refusal is
one line on stderr, `lineup app manifest: <reason> ...`, and exit status 1 (the same for the
other commands, with their name).

`main(argv)` takes the arguments after `lineup app`; `python -m lineup.sdk.cli manifest PATH`
runs it too.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Final

from ._cli_support import Refused, app_class, refuse
from .manifest import ManifestInvalid, manifest_json
from .schema import SchemaUnsupported
from .tools import manifest_of

__all__ = ["main"]

PROG: Final = "lineup app"
EXIT_REFUSED: Final = 1


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROG, description="MiniApp authoring tools.")
    sub = parser.add_subparsers(dest="command", required=True)
    manifest = sub.add_parser(
        "manifest", help="print a MiniApp's lineup.app.v1 manifest, generated from its code"
    )
    manifest.add_argument("path", metavar="PATH", help="package folder, module file or module")
    manifest.add_argument("--out", metavar="FILE", type=Path, help="write here, not to stdout")
    manifest.add_argument(
        "--class",
        dest="app_class",
        metavar="module:Class",
        help="the MiniApp class, when PATH holds several (or none) with an app_info",
    )
    # Here, not at the top: `lineup app manifest` needs neither (nor their cryptography).
    from . import _bundle_cli, _scaffold

    _bundle_cli.add_commands(sub)
    _scaffold.add_command(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run `lineup app ...`; returns the exit status (0 done, 1 refused, 2 usage)."""
    try:
        args = _parser().parse_args(argv)
    except SystemExit as exc:  # --help, or a usage error argparse already printed
        return exc.code if isinstance(exc.code, int) else 2
    try:
        return _run(args)
    except Refused as exc:
        return _report(args.command, exc.reason, exc.detail)
    except (ManifestInvalid, SchemaUnsupported) as exc:
        return _report(args.command, exc.reason, exc.path)


def _run(args: argparse.Namespace) -> int:
    from . import _bundle_cli, _scaffold

    if args.command == "new":
        return _scaffold.run(args)
    if args.command != "manifest":
        return _bundle_cli.run(args)
    text = manifest_json(manifest_of(app_class(args.path, args.app_class)))
    if args.out is None:
        sys.stdout.write(text)
        return 0
    try:
        args.out.write_text(text, encoding="utf-8")
    except OSError as exc:
        refuse("output_not_written", f"{args.out}: {exc.strerror}")
    return 0


def _report(command: str, reason: str, detail: str) -> int:
    line = f"{PROG} {command}: {reason}" + (f" {detail}" if detail else "")
    print(line.replace("\n", " "), file=sys.stderr)
    return EXIT_REFUSED


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
