"""`lineup app pack-mcp`: an MCP server as a signed LineUp bundle (issue 31).

    pack-mcp --npm NAME@VERSION   --key KEY --out F [--scope S] [--integrity SRI] [-- ARGS…]
    pack-mcp --pypi NAME==VERSION --key KEY --out F [--scope S] [--module M] [-- ARGS…]
    pack-mcp --dir PATH           --key KEY --out F [--scope S] -- COMMAND ARGS…

Theory of operation
-------------------
The server is first put together in a scratch folder, `<scratch>/server/`, exactly as it will
run once installed (its command's paths are relative to it):

    --npm   `npm install --ignore-scripts --omit=dev` of the package (its dependencies are
            npm's to resolve; no install script of any runs), then what Node never loads from
            `node_modules` dropped (TypeScript sources and declarations, source maps). The
            command is `node node_modules/<name>/<its bin, else its main>` and ARGS.
    --pypi  `pip download --only-binary=:all:` of the package and its dependencies (wheels
            only: nothing is built, no setup script runs), then those wheels unpacked by
            `pip install --no-index --no-deps --target`. The command is this interpreter's
            `-m <module>` (default: the name, `-` as `_`) and ARGS: `-m` puts the folder first
            on `sys.path`.
    --dir   a copy of PATH (no hidden files, no caches); the command is COMMAND ARGS.

npm and PyPI record what they fetched in `mcp-lock.json` beside it: each package's name,
version and hash (npm: its lockfile's `integrity`; PyPI: each wheel's SHA-256). With
`--integrity`, npm's tarball of the package itself must be that one (the registry's
`dist.integrity`), or nothing is packed. Then the server
is started once, inside the sandbox and offline (`_mcp_probe.probe_app`, the probe
`lineup run --dev-mcp` uses), and its `initialize` and `tools/list` become the `lineup.app.v1`
manifest, kind `mcp`. A tool the manifest cannot take (a schema jsonschema refuses) refuses the
pack, naming the tool, the reason and the JSON pointer of the faulty keyword in its schema.
The folder is then packed and signed as `lineup app pack` does (`lineup.sdk.bundle.pack`),
with the same one line printed. The scope is the package's name without its npm scope
(`@modelcontextprotocol/server-basic-vanillajs` → `server-basic-vanillajs`), or the server's
name for `--dir`; the version is the package's, or the server's (`--scope` and `--version` say
otherwise).

Here, not in the SDK: the probe confines a process (`_sandbox`), which is the supervisor's.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from lineup import __version__

__all__ = ["LOCK_FILE", "NODE_DROPPED", "main"]

PROG: Final = "lineup app pack-mcp"
LOCK_FILE: Final = "mcp-lock.json"
LOCK_FORMAT: Final = "lineup.mcp-lock.v1"
SERVER_FOLDER: Final = "server"  # the bundle's one package folder: `app/server/`
FETCH_TIMEOUT: Final = 600.0  # one npm or pip run
# What Node never loads from node_modules (it refuses to strip TypeScript types there).
NODE_DROPPED: Final = (".ts", ".mts", ".cts", ".map")
_NPM_SPEC: Final = re.compile(r"^((?:@[a-z0-9][a-z0-9._-]*/)?[a-z0-9][a-z0-9._-]*)@([^@\s]+)$")
_PYPI_SPEC: Final = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==([A-Za-z0-9.+!_-]+)$")
_SCOPE: Final = re.compile(r"^[a-z][a-z0-9-]{0,62}$")  # the manifest's rule
_MODULE: Final = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*(\.[A-Za-z_][A-Za-z0-9_]*)*$")
_COPY_IGNORED: Final = ("__pycache__", "*.pyc", "*.pyo", "*.lineup", ".*")


class _Refused(Exception):
    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(reason)
        self.reason, self.detail = reason, detail


@dataclass
class _Staged:
    """The server put together: its folder's command, its default scope and version."""

    command: list[str]
    name: str = ""  # the package's name (npm: without its scope), "" for --dir
    version: str | None = None
    locked: list[dict[str, str]] = field(default_factory=list)
    source: str = ""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG, description="Write an MCP server as a signed LineUp bundle (kind mcp)."
    )
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--npm", metavar="NAME@VERSION", help="an npm package")
    source.add_argument("--pypi", metavar="NAME==VERSION", help="a PyPI package (wheels only)")
    source.add_argument("--dir", metavar="PATH", type=Path, help="a local folder")
    parser.add_argument("--key", metavar="KEY", type=Path, required=True, help="private key")
    parser.add_argument("--out", metavar="FILE.lineup", type=Path, required=True)
    parser.add_argument("--scope", help="the app's scope (default: the package's name)")
    parser.add_argument("--version", help="the app's version (default: the package's)")
    parser.add_argument("--module", help="--pypi: the module `python -m` runs")
    parser.add_argument(
        "--integrity", metavar="SRI", help="--npm: the package's tarball must have this hash"
    )
    parser.add_argument(
        "--min-host-version",
        metavar="V",
        default=__version__,
        help=f"the oldest LineUp that may install it (default: this one, {__version__})",
    )
    return parser


def main(argv: Sequence[str]) -> int:
    """Run `lineup app pack-mcp` (`argv` follows `pack-mcp`): 0 packed, 1 refused, 2 usage.
    Everything after `--` is the server's command (`--dir`) or its extra arguments."""
    argv = list(argv)
    cut = argv.index("--") if "--" in argv else len(argv)
    try:
        args = _parser().parse_args(argv[:cut])
    except SystemExit as exc:
        return exc.code if isinstance(exc.code, int) else 2
    try:
        return _pack_mcp(args, argv[cut + 1 :])
    except _Refused as exc:
        line = f"{PROG}: {exc.reason}" + (f" {exc.detail}" if exc.detail else "")
        print(line.replace("\n", " "), file=sys.stderr)
        return 1


def _pack_mcp(args: argparse.Namespace, rest: list[str]) -> int:
    from lineup.sdk._bundle_cli import describe, replace_file, signing_key
    from lineup.sdk._cli_support import Refused
    from lineup.sdk.bundle import BundleRefused, pack

    from ._mcp_probe import ProbeFailed, probe_app, write_documents

    try:
        key = signing_key(args.key)
    except Refused as exc:
        raise _Refused(exc.reason, exc.detail) from None
    if args.scope is not None and not _SCOPE.match(args.scope):
        raise _Refused("app_scope_invalid", f"{args.scope!r}: a-z, 0-9 and -, a letter first")
    if args.dir is not None and not rest:
        raise _Refused("mcp_command_missing", "--dir needs the server's command after `--`")
    with tempfile.TemporaryDirectory(prefix="lineup-pack-mcp-") as scratch:
        folder = Path(scratch) / SERVER_FOLDER
        if args.npm is not None:
            staged = _stage_npm(args.npm, folder, rest, args.integrity)
        elif args.pypi is not None:
            staged = _stage_pypi(args.pypi, folder, Path(scratch) / "wheels", args.module, rest)
        else:
            staged = _stage_dir(args.dir, folder, rest)
        if staged.locked:
            lock = {
                "format": LOCK_FORMAT,
                "source": staged.source,
                "packages": staged.locked,
            }
            (folder / LOCK_FILE).write_text(json.dumps(lock, indent=2, sort_keys=True) + "\n")
        from lineup.sdk.mcp_server import scope_of

        scope = args.scope or (scope_of(staged.name) if staged.name else None)
        try:
            probed = probe_app(
                folder, staged.command, scope=scope, version=args.version or staged.version
            )
        except ProbeFailed as exc:
            raise _Refused("mcp_probe_failed", str(exc)) from None
        if probed.refused:
            raise _Refused("mcp_tool_refused", _refusals(probed.refused, probed.listed))
        # Its UIs, as the probe read them, in the folder the installed app serves `web/` from.
        write_documents(probed, folder / "web")
        try:
            data = pack(folder, probed.manifest, key, min_host_version=args.min_host_version)
        except BundleRefused as exc:
            raise _Refused(exc.code.value, exc.message) from None
    try:
        replace_file(args.out, data)
    except Refused as exc:
        raise _Refused(exc.reason, exc.detail) from None
    print(describe(data))
    return 0


def _refusals(refused: Sequence[tuple[str, str]], listed: Sequence[dict[str, Any]]) -> str:
    """Each tool left out: `<name> <reason> <where>`, `where` the JSON pointer of the faulty
    keyword in its schema (`/inputSchema/properties/n/type`), found by checking it again."""
    from lineup.sdk._tool_model import ManifestInvalid, check_tool_schema

    said: list[str] = []
    for name, left_out in refused:
        tool = next((t for t in listed if t.get("name") == name), {})
        reason, where = left_out, ""
        for key in ("inputSchema", "outputSchema"):
            if key not in tool:
                continue
            try:
                check_tool_schema(tool[key], f"/{key}", "mcp")
            except ManifestInvalid as exc:
                reason, where = exc.reason, exc.path
                break
        said.append(" ".join(part for part in (name, reason, where) if part))
    return "; ".join(said)


# ---------------------------------------------------------------------------------- npm


def _stage_npm(spec: str, folder: Path, extra: list[str], integrity: str | None) -> _Staged:
    matched = _NPM_SPEC.match(spec)
    if matched is None:
        raise _Refused("mcp_package_invalid", f"{spec}: give NAME@VERSION")
    name = matched.group(1)
    npm = shutil.which("npm")
    if npm is None or shutil.which("node") is None:
        raise _Refused("npm_not_found", "--npm needs npm and node on PATH")
    folder.mkdir()
    (folder / "package.json").write_text('{"private": true}\n')
    _run(
        [
            npm,
            "install",
            "--prefix",
            str(folder),
            "--ignore-scripts",
            "--omit=dev",
            "--no-audit",
            "--no-fund",
            "--save-exact",
            "--prefer-offline",
            spec,
        ],
        "npm install",
    )
    lock = json.loads((folder / "package-lock.json").read_text())
    locked: list[dict[str, str]] = []
    for where, entry in sorted((lock.get("packages") or {}).items()):
        if not where or not isinstance(entry, dict) or entry.get("inBundle"):
            continue
        sri = entry.get("integrity")
        if not isinstance(sri, str):  # a git or file dependency: nothing pins it
            raise _Refused("mcp_integrity_missing", where)
        package = where.rpartition("node_modules/")[2]
        locked.append({"name": package, "version": str(entry.get("version")), "hash": sri})
    pinned = (lock.get("packages") or {}).get(f"node_modules/{name}") or {}
    if integrity is not None and pinned.get("integrity") != integrity:
        raise _Refused("mcp_integrity_mismatch", f"{spec}: npm's tarball is not {integrity}")
    home = folder / "node_modules" / name
    meta = json.loads((home / "package.json").read_text())
    _drop(folder / "node_modules", NODE_DROPPED)
    entry_file = _npm_entry(meta, name.rpartition("/")[2])
    if not (home / entry_file).is_file():
        raise _Refused("mcp_entry_not_found", f"{name}: {entry_file}")
    command = ["node", (Path("node_modules") / name / entry_file).as_posix(), *extra]
    return _Staged(
        command, name.rpartition("/")[2], str(meta.get("version") or ""), locked, f"npm:{spec}"
    )


def _npm_entry(meta: dict[str, Any], bare: str) -> str:
    """The file the package runs as: its `bin` (the only one, or the one named as the
    package), else its `main`."""
    found = meta.get("bin")
    if isinstance(found, dict) and found:
        bins = {str(k): str(v) for k, v in found.items()}
        found = next(iter(bins.values())) if len(bins) == 1 else bins.get(bare)
        if found is None:
            raise _Refused("mcp_entry_not_found", f"several bins: {', '.join(sorted(bins))}")
    if not isinstance(found, str):
        found = meta.get("main")
    if not isinstance(found, str) or not found:
        raise _Refused("mcp_entry_not_found", "the package has no bin and no main")
    return Path(found).as_posix().removeprefix("./")


def _drop(root: Path, suffixes: tuple[str, ...]) -> None:
    for dirpath, _, filenames in os.walk(root):
        for name in filenames:
            if name.endswith(suffixes):
                os.unlink(os.path.join(dirpath, name))


# ---------------------------------------------------------------------------------- PyPI


def _stage_pypi(
    spec: str, folder: Path, wheels: Path, module: str | None, extra: list[str]
) -> _Staged:
    import hashlib

    matched = _PYPI_SPEC.match(spec)
    if matched is None:
        raise _Refused("mcp_package_invalid", f"{spec}: give NAME==VERSION")
    name, version = matched.groups()
    module = module or name.replace("-", "_").replace(".", "_")
    if not _MODULE.match(module):
        raise _Refused("mcp_package_invalid", f"{module}: not a module name")
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "--no-input"]
    _run([*pip, "download", "--only-binary=:all:", "--dest", str(wheels), spec], "pip download")
    found = sorted(wheels.glob("*.whl"))
    locked = [
        {
            "name": path.name.split("-")[0],
            "version": path.name.split("-")[1],
            "hash": "sha256-" + hashlib.sha256(path.read_bytes()).hexdigest(),
        }
        for path in found
    ]
    folder.mkdir()
    _run(
        [
            *pip,
            "install",
            "--no-index",
            "--no-deps",
            "--no-compile",
            "--target",
            str(folder),
            *map(str, found),
        ],
        "pip install",
    )
    command = [sys.executable, "-m", module, *extra]
    return _Staged(command, name, version, locked, f"pypi:{spec}")


# ---------------------------------------------------------------------------------- a folder


def _stage_dir(source: Path, folder: Path, command: list[str]) -> _Staged:
    if not source.is_dir():
        raise _Refused("app_not_found", f"{source}: not a folder")
    shutil.copytree(source, folder, symlinks=True, ignore=shutil.ignore_patterns(*_COPY_IGNORED))
    return _Staged(list(command), source="dir")


def _run(command: list[str], what: str) -> None:
    try:
        done = subprocess.run(
            command,
            capture_output=True,
            text=True,
            timeout=FETCH_TIMEOUT,
            check=False,
            stdin=subprocess.DEVNULL,
        )
    except subprocess.TimeoutExpired:
        raise _Refused("mcp_fetch_failed", f"{what}: timed out") from None
    if done.returncode != 0:
        last = (done.stderr.strip().splitlines() or ["failed"])[-1][:300]
        raise _Refused("mcp_fetch_failed", f"{what}: {last}")
