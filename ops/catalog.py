"""`python -m lineup.ops.catalog build`: the local catalog `make run` offers in the App Registry.

    build [--out build/catalog] [--key build/dev-key/lineup-dev] [--examples examples]

Theory of operation. The development key is made once (by `lineup app keygen` itself: the
private half 0600, never overwritten) and its `.pub` copied into the catalog, where only the
embedded default trusts it (`lineup run --catalog`). Every MiniApp package directly under the
examples root (a folder with an `__init__.py`) is packed and signed by `lineup app pack`, each
in its own process (two packages never share an interpreter), into
`<out>/<app_scope>-<version>.lineup`. A package is packed again only when its files, the key
or this LineUp's version changed (a digest of them kept in `<out>/.built.json`), so a second
build with nothing changed writes nothing; a bundle that a package no longer produces (an
older version, a package removed) is deleted. Prints one line per bundle packed.

The catalog also offers an MCP server, so that `make run` shows one working with no network:
each of `MCP_SERVERS` (an npm package pinned by version and integrity, `lineup.facts.npm_pins`)
is packed by `lineup app pack-mcp`, which fetches it (the network is needed here, at set-up,
once), lists it in the sandbox offline and signs it. It is packed again only when the pin, its
arguments, the key or LineUp's version changed. Where it cannot be packed (npm or node
missing, no network), the build says so in one line and goes on without it.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any, Final

from lineup import __version__
from lineup.facts.npm_pins import BASIC_VANILLAJS, NpmPin

__all__ = ["build", "main"]

DEFAULT_OUT: Final = Path("build/catalog")
DEFAULT_KEY: Final = Path("build/dev-key/lineup-dev")
DEFAULT_EXAMPLES: Final = Path(__file__).resolve().parent.parent / "examples"
STATE_FILE: Final = ".built.json"
PACK_TIMEOUT: Final = 120.0  # one package's manifest and pack, in its own process
PACK_MCP_TIMEOUT: Final = 600.0  # one MCP server's fetch, listing and pack
# The MCP servers the catalog offers: a pin and the arguments its server runs with.
MCP_SERVERS: Final[tuple[tuple[NpmPin, tuple[str, ...]], ...]] = ((BASIC_VANILLAJS, ("--stdio",)),)
_SKIPPED: Final = frozenset({"__pycache__", "node_modules"})
_SKIPPED_SUFFIXES: Final = (".pyc", ".pyo", ".lineup")


class BuildFailed(Exception):
    """A package that does not pack, or a key that cannot be made: one line for the user."""


def build(
    out: Path,
    key: Path,
    examples: Path,
    mcp_servers: tuple[tuple[NpmPin, tuple[str, ...]], ...] = MCP_SERVERS,
) -> list[str]:
    """Build the catalog (see the module) with the examples and `mcp_servers`; returns the
    files it wrote (empty: nothing changed). Raises `BuildFailed`."""
    out.mkdir(parents=True, exist_ok=True)
    public = key.with_name(key.name + ".pub")
    if not key.exists():
        key.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        _lineup_app("keygen", "--out", str(key))
    _copy_if_changed(public, out / public.name)
    state = _load_state(out)
    key_digest = hashlib.sha256(public.read_bytes()).hexdigest()
    built: dict[str, Any] = {}
    wrote: list[str] = []
    for package in _packages(examples):
        digest = _digest(package, key_digest)
        known = state.get(package.name)
        if (
            isinstance(known, dict)
            and known.get("digest") == digest
            and isinstance(known.get("file"), str)
            and (out / known["file"]).is_file()
        ):
            built[package.name] = known
            continue
        name = _pack(package, key, out)
        built[package.name] = {"digest": digest, "file": name}
        wrote.append(name)
    for pin, arguments in mcp_servers:
        _mcp_server(pin, arguments, key, out, key_digest, state, built, wrote)
    keep = {str(entry["file"]) for entry in built.values()}
    for entry in state.values():
        old = entry.get("file") if isinstance(entry, dict) else None
        if isinstance(old, str) and old not in keep and "/" not in old:
            (out / old).unlink(missing_ok=True)
    if built != state:
        _write_state(out, built)
    return wrote


def _mcp_server(
    pin: NpmPin,
    arguments: tuple[str, ...],
    key: Path,
    out: Path,
    key_digest: str,
    state: dict[str, Any],
    built: dict[str, Any],
    wrote: list[str],
) -> None:
    """Pack one of `MCP_SERVERS` unless its bundle is there for the same inputs (the module)."""
    label = f"npm:{pin.spec}"
    digest = hashlib.sha256(
        "\0".join((__version__, key_digest, pin.spec, pin.integrity, *arguments)).encode()
    ).hexdigest()
    known = state.get(label)
    if (
        isinstance(known, dict)
        and known.get("digest") == digest
        and isinstance(known.get("file"), str)
        and (out / known["file"]).is_file()
    ):
        built[label] = known
        return
    tmp = out / f".{pin.name.rpartition('/')[2]}.lineup.tmp"
    try:
        line = _lineup_app(
            "pack-mcp",
            *pin.spec_args(),
            "--key",
            str(key),
            "--out",
            str(tmp),
            "--",
            *arguments,
            timeout=PACK_MCP_TIMEOUT,
        )
        scope, version = line.split()[:2]
        name = f"{scope}-{version}.lineup"
        os.replace(tmp, out / name)
    except BuildFailed as exc:
        print(f"catalog: without the MCP server {pin.spec}: {exc}", flush=True)
        return
    finally:
        tmp.unlink(missing_ok=True)
    print(f"catalog: {name} ({pin.spec})", flush=True)
    built[label] = {"digest": digest, "file": name}
    wrote.append(name)


def _packages(examples: Path) -> list[Path]:
    if not examples.is_dir():
        return []
    return sorted(
        child
        for child in examples.iterdir()
        if child.is_dir() and child.name.isidentifier() and (child / "__init__.py").is_file()
    )


def _digest(package: Path, key_digest: str) -> str:
    """Of every file the bundle could hold (its path and bytes), the key and LineUp's version."""
    digest = hashlib.sha256(f"{__version__}\0{key_digest}\0".encode())
    for dirpath, dirnames, filenames in os.walk(package):
        dirnames[:] = sorted(d for d in dirnames if d not in _SKIPPED)
        for name in sorted(filenames):
            if name.endswith(_SKIPPED_SUFFIXES):
                continue
            path = Path(dirpath) / name
            digest.update(path.relative_to(package).as_posix().encode() + b"\0")
            digest.update(path.read_bytes() + b"\0")
    return digest.hexdigest()


def _pack(package: Path, key: Path, out: Path) -> str:
    """Pack `package` with `lineup app pack` into `out`, named after what it is."""
    tmp = out / f".{package.name}.lineup.tmp"
    try:
        line = _lineup_app("pack", str(package), "--key", str(key), "--out", str(tmp))
        scope, version = line.split()[:2]  # `<app_scope> <version> <size> bytes sha256 …`
        name = f"{scope}-{version}.lineup"
        os.replace(tmp, out / name)
    finally:
        tmp.unlink(missing_ok=True)
    print(f"catalog: {name} ({package.name})", flush=True)
    return name


def _lineup_app(*args: str, timeout: float = PACK_TIMEOUT) -> str:
    # `pack-mcp` is the supervisor's (it confines the server it lists); the rest the SDK's.
    cli = ["lineup", "app"] if args[0] == "pack-mcp" else ["lineup.sdk.cli"]
    try:
        done = subprocess.run(
            [sys.executable, "-m", *cli, *args],
            capture_output=True,
            text=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise BuildFailed(f"lineup app {args[0]}: timed out") from None
    if done.returncode != 0:
        why = (done.stderr.strip().splitlines() or ["failed"])[-1]
        raise BuildFailed(why)
    return done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""


def _copy_if_changed(source: Path, target: Path) -> None:
    body = source.read_bytes()
    if target.is_file() and target.read_bytes() == body:
        return
    shutil.copyfile(source, target)


def _load_state(out: Path) -> dict[str, Any]:
    try:
        raw = json.loads((out / STATE_FILE).read_text())
    except (OSError, ValueError):
        return {}
    return raw if isinstance(raw, dict) else {}


def _write_state(out: Path, state: dict[str, Any]) -> None:
    tmp = out / f"{STATE_FILE}.tmp"
    tmp.write_text(json.dumps(state, indent=2, sort_keys=True) + "\n")
    os.replace(tmp, out / STATE_FILE)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m lineup.ops.catalog")
    sub = parser.add_subparsers(dest="command", required=True)
    run = sub.add_parser("build", help="pack and sign every example into the catalog folder")
    run.add_argument("--out", type=Path, default=DEFAULT_OUT)
    run.add_argument("--key", type=Path, default=DEFAULT_KEY, help="the development key")
    run.add_argument("--examples", type=Path, default=DEFAULT_EXAMPLES)
    args = parser.parse_args(argv)
    try:
        build(args.out, args.key, args.examples)
    except (BuildFailed, OSError) as exc:
        print(f"lineup catalog: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
