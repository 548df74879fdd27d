"""`lineup app import-mcp CONFIG.json [--server NAME] [--folder DIR]`: the servers of a desktop
host's `mcpServers` block, as LineUp MCP apps (`lineup app import-mcp --forget SCOPE`: one
imported app and its secrets gone from the data dir).

Theory of operation
-------------------
Claude Desktop and the hosts that copied it configure a server as
`{"mcpServers": {"NAME": {"command": "...", "args": [...], "env": {...}}}}`. `servers_of` reads
that block (no I/O: refusals are `ImportRefused`, one line each); `import_server` makes one
server an app the way `lineup run --dev-mcp` makes one (`_mcp_probe.dev_mcp`: listed inside the
sandbox, offline, its manifest written from its own `tools/list`), with three differences:

- its scope is the user's name for it (`NAME`, made a scope by `scope_of`), not the server's
  own, so two servers run from one script stay two apps;
- its `env` values are secrets: the probe gets them on its stdin, and they are kept owner-only
  (`_mcp_secrets`), never in the manifest, never in argv;
- it is kept: its manifest under `<data dir>/mcp-import/<scope>/`, beside `entry.json`, its
  registry entry, which every later `lineup run` with that data dir loads (`imported_apps`,
  from `_runtime.plan_runtime`). It is unsigned, so it is marked as a development app is (the
  registry's source `dev`), titled "(imported)".

The server runs from its folder: `--folder`, else the folder of the first absolute path among
its `args` (a directory itself, or a file's folder), the only place besides its program it may
read and execute in the sandbox. A server named by a package runner alone (`npx -y pkg`,
`uvx pkg`) has no folder and would need the network to fetch its package: it is refused, with
`lineup app pack-mcp` as the way to bring it. Remote servers (`url`, `type: "http"`) are not
processes to sandbox and are refused too.
"""

from __future__ import annotations

import argparse
import json
import shutil
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final, TextIO

from . import _mcp_secrets
from ._mcp_probe import ProbeFailed, dev_mcp

__all__ = [
    "IMPORT_DIR",
    "ImportRefused",
    "ImportedServer",
    "folder_of",
    "forget_server",
    "import_server",
    "imported_apps",
    "main",
    "servers_of",
]

IMPORT_DIR: Final = "mcp-import"  # under the data dir: one folder per imported server
MAX_CONFIG: Final = 1024 * 1024
MAX_ENV: Final = 256  # variables of one server
PROG: Final = "lineup app import-mcp"
EXIT_REFUSED: Final = 1


class ImportRefused(ValueError):
    """The configuration (or one server of it) cannot be imported: the message says why."""


@dataclass(frozen=True)
class ImportedServer:
    """One server of an `mcpServers` block, as its host would start it."""

    name: str
    command: str
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict[str, str])

    def __repr__(self) -> str:  # never the env's values, wherever a repr lands
        return f"ImportedServer({self.name!r}, {self.command!r}, env={sorted(self.env)})"


def servers_of(text: str | bytes) -> tuple[ImportedServer, ...]:
    """The servers of a desktop host's configuration, in its order. Raises ImportRefused."""
    if len(text) > MAX_CONFIG:
        raise ImportRefused(f"larger than {MAX_CONFIG} bytes")
    try:
        config: Any = json.loads(text)
    except ValueError:
        raise ImportRefused("not JSON") from None
    block = config.get("mcpServers") if isinstance(config, dict) else None
    if not isinstance(block, dict) or not block:
        raise ImportRefused('no "mcpServers" object with a server in it')
    return tuple(_server(str(name), spec) for name, spec in block.items())


def _server(name: str, spec: Any) -> ImportedServer:
    where = f"mcpServers.{name}"
    if not isinstance(spec, dict):
        raise ImportRefused(f"{where}: not an object")
    if "url" in spec or spec.get("type") not in (None, "stdio"):
        raise ImportRefused(f"{where}: a remote server (url); only stdio servers are imported")
    command, args, env = spec.get("command"), spec.get("args", []), spec.get("env", {})
    if not isinstance(command, str) or not command.strip():
        raise ImportRefused(f"{where}.command: a program is needed")
    if not isinstance(args, list) or not all(isinstance(a, str) for a in args):
        raise ImportRefused(f"{where}.args: a list of strings is needed")
    if (
        not isinstance(env, dict)
        or len(env) > MAX_ENV
        or not all(isinstance(k, str) and k and "=" not in k for k in env)
        or not all(isinstance(v, str) and "\0" not in v for v in env.values())
    ):
        # The values are secrets: the message names neither them nor the variables.
        raise ImportRefused(f"{where}.env: an object of string values is needed")
    return ImportedServer(name, command, tuple(args), dict(env))


def folder_of(server: ImportedServer) -> Path | None:
    """Where the server runs (the module's docstring): the first absolute path among its
    args, a directory, or a file's folder. None when it names none."""
    for arg in server.args:
        path = Path(arg)
        if path.is_absolute() and path.exists():
            return path if path.is_dir() else path.parent
    return None


def import_server(
    server: ImportedServer,
    data_dir: Path,
    folder: Path | None = None,
    network: tuple[str, ...] = (),
) -> dict[str, str]:
    """Make `server` an app of the data dir (the module's docstring); its registry entry.
    `network`: the hosts (`host:port`) its manifest declares, for the user to grant
    (`lineup.sdk.mcp_network`). Raises ImportRefused, or ProbeFailed when the server cannot
    be listed."""
    from pydantic import TypeAdapter, ValidationError

    from lineup.sdk.mcp_network import HostPort
    from lineup.sdk.mcp_server import scope_of  # not on `lineup run`'s path (`imported_apps`)

    try:
        hosts = TypeAdapter(tuple[HostPort, ...]).validate_python(network)
    except ValidationError:
        raise ImportRefused("--network: each is host:port") from None

    folder = folder or folder_of(server)
    if folder is None:
        raise ImportRefused(
            "it names no folder of its own (an absolute path in args); give one "
            "with --folder, or bring a published package with `lineup app pack-mcp`"
        )
    scope = scope_of(server.name)
    if scope in _shipped():
        raise ImportRefused(f"{scope} is an app LineUp ships: import it under another name")
    command = [server.command, *server.args]
    entry = dev_mcp(folder, command, data_dir, scope=scope, env=server.env, kept_in=IMPORT_DIR)
    if hosts:
        _declare_network(Path(entry["manifest"]), hosts)
    entry["title"] = entry["title"].removesuffix(" (dev)") + " (imported)"
    entry["imported"] = "true"
    # Bound to the command as the manifest keeps it (`_miniapps` compares it at each start).
    _mcp_secrets.store(data_dir, scope, server.env, command, entry["app_path"])
    where = data_dir / IMPORT_DIR / scope
    (where / "entry.json").write_text(json.dumps(entry, indent=2, sort_keys=True) + "\n")
    return entry


def _declare_network(manifest_file: Path, hosts: tuple[str, ...]) -> None:
    from lineup.sdk.manifest import load_manifest, manifest_json

    data = json.loads(manifest_file.read_text())
    data["mcp"]["network"] = list(hosts)
    manifest_file.write_text(manifest_json(load_manifest(data)))


def forget_server(data_dir: Path, scope: str) -> bool:
    """Remove the imported app `scope` (its entry, its manifest) and its secrets from the data
    dir: the next `lineup run` has it no more. False when there was no such app."""
    from lineup.sdk.mcp_server import scope_of

    where = data_dir / IMPORT_DIR / scope
    if scope != scope_of(scope) or not (where / "entry.json").is_file():
        return False
    _mcp_secrets.forget(data_dir, scope)  # first: no secret outlives its app
    shutil.rmtree(where)
    return True


def _shipped() -> frozenset[str]:
    from lineup.miniapps.catalogue import BUNDLED

    return frozenset(app.app_scope for app in BUNDLED)


def imported_apps(data_dir: Path) -> tuple[dict[str, str], ...]:
    """The registry entries of the servers imported into `data_dir`, by scope; a folder whose
    entry is unreadable, or that would stand in for an app LineUp ships, is left out (and the
    rest load)."""
    shipped = _shipped()
    found: list[dict[str, str]] = []
    for entry_file in sorted((data_dir / IMPORT_DIR).glob("*/entry.json")):
        try:
            entry = json.loads(entry_file.read_text())
        except (OSError, ValueError):
            continue
        if (
            isinstance(entry, dict)
            and all(isinstance(v, str) for v in entry.values())
            and entry.get("app_scope") not in shipped
        ):
            found.append(entry)
    return tuple(found)


# ---------------------------------------------------------------------- the command


def _parser(data_dir_default: Path) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Import the servers of a desktop host's mcpServers configuration as apps.",
    )
    parser.add_argument("config", metavar="CONFIG.json", type=Path, nargs="?")
    parser.add_argument(
        "--forget", metavar="SCOPE", help="remove an imported app and its secrets instead"
    )
    parser.add_argument(
        "--network",
        metavar="HOST:PORT",
        action="append",
        default=[],
        help="a host the server must reach, asked of you as mcp.network (needs --server)",
    )
    parser.add_argument("--server", metavar="NAME", help="only this server of the block")
    parser.add_argument(
        "--folder", metavar="DIR", type=Path, help="the server's own folder (needs --server)"
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=None,
        help=f"the data dir the apps are kept in (default: {data_dir_default})",
    )
    return parser


def main(argv: list[str], *, data_dir_default: Path, out: TextIO, err: TextIO) -> int:
    """Run `lineup app import-mcp` (`argv` follows `import-mcp`): one line a server, on stdout
    when imported, on stderr when refused. Exit 0 when every server named was imported."""
    args = _parser(data_dir_default).parse_args(argv)
    data_dir: Path = (args.data_dir or data_dir_default).absolute()
    if args.forget is not None:
        if args.config is not None or not forget_server(data_dir, args.forget):
            err.write(f"{PROG}: --forget {args.forget}: no such imported app (and no CONFIG)\n")
            return EXIT_REFUSED
        out.write(f"forgot {args.forget} and its secrets\n")
        return 0
    try:
        if args.config is None:
            raise ImportRefused("CONFIG.json is needed")
        if (args.folder is not None or args.network) and args.server is None:
            raise ImportRefused("--folder and --network are one server's: name it with --server")
        try:
            text = args.config.read_bytes()
        except OSError as exc:
            raise ImportRefused(f"{args.config}: {exc.strerror}") from None
        servers = servers_of(text)
        if args.server is not None:
            servers = tuple(s for s in servers if s.name == args.server)
            if not servers:
                raise ImportRefused(f"no server {args.server!r} in mcpServers")
    except ImportRefused as exc:
        err.write(f"{PROG}: {exc}\n")
        return EXIT_REFUSED
    data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    status = 0
    for server in servers:
        folder = args.folder.resolve() if args.folder is not None else None
        try:
            entry = import_server(server, data_dir, folder, tuple(args.network))
        except (ImportRefused, ProbeFailed) as exc:
            err.write(f"{PROG}: {server.name}: {exc}\n")
            status = EXIT_REFUSED
            continue
        secrets = f", {len(server.env)} secret(s) kept owner-only" if server.env else ""
        left_out = f" (left out: {entry['refused']})" if entry.get("refused") else ""
        out.write(f"imported {server.name} as {entry['app_scope']}{secrets}{left_out}\n")
    if status == 0:
        out.write("restart `lineup run` with this data dir to load them\n")
    return status
