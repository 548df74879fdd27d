"""What several tests build the same way, built once per test session: an MCP server packed by
`lineup app pack-mcp`, an MCP server listed as `lineup run --dev-mcp` lists it, and the local
catalog `make run` offers.

Theory of operation
-------------------
`pack_mcp(ARGS)` runs the real command (its `main`) and answers the bundle it wrote. Packing
a published server costs an `npm install` and a sandboxed listing (seconds, more under load),
and several tests need the same pinned server packed the same way: `shared_pack(factory, key,
ARGS)` packs it once per test session and hands every later caller the same bytes.
`make_run_catalog(factory)` is the catalog `make run` offers: `lineup.ops.catalog.build` of the
examples (each packed in a process of its own) and its MCP servers, the session's shared packs
of them; built once per session for the browser tests that install from it; they only read it.

xdist's workers are separate processes of one session: they share the parent of their base
temporary folders (`popen-gwN/..`, a folder of this session alone, which pytest's own clean-up
removes with the session's other temporary folders), so the bundles are kept there, one file
per pack named by a digest of everything the pack depends on that a test chooses (the signing
key and the arguments: the pin, its integrity, the server's own arguments). A file lock per
pack makes the first caller pack it and the others wait; the bundle is written under a
temporary name and renamed, so a killed pack leaves nothing a later caller would take. Without
xdist the session's own base folder is used. A bundle is never reused across sessions: LineUp's
code and npm's resolution of a pin's dependencies may have changed in between.

The catalog is built the same way, under its own lock, and marked built only once whole.

`shared_dev_mcp(factory, FOLDER, COMMAND, DATA_DIR)` is `_mcp_probe.dev_mcp` for tests whose
claim is what the runtime does with the app, not its listing: the server is listed once per
session in its sandbox (a probe process and the server's own start, about two CPU-seconds for
a Python server), into a data dir of the session's; each caller gets a copy of the app's folder
(its manifest and UI documents) in its own data dir, and the registry entry pointing there, as
`dev_mcp` would have written them. A test may change its copy (a tool's deadline); the listing
itself is proven by the tests that call `dev_mcp` (`tests/e2e/test_mcp_ui_probe.py`, the docs).

A test whose claim is the pack (what pack-mcp writes) may still take the shared bundle: it
was written by the real pack-mcp, in this session, with this code and these arguments.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
from pathlib import Path
from typing import Final

import pytest

from lineup.sdk.bundle import SigningKey

# The key of the shared packs the tests install: one key, so that tests asking for the same
# server with the same arguments share its one pack.
MCP_PACK_KEY: Final = SigningKey(b"\x31" * 32)


def pack_mcp(*args: str) -> bytes:
    """`lineup app pack-mcp ARGS`, its `main` in this process (what it fetches, lists and
    packs runs in processes of its own); the bundle it wrote (`--out`). The command as a
    process of its own is the docs' (`docs/mcp-servers.md`) and the catalog's."""
    from lineup.supervisor._pack_mcp import main

    out = Path(args[args.index("--out") + 1])
    assert main(list(args)) == 0, "pack-mcp refused: its line is in the captured stderr"
    return out.read_bytes()


def shared_pack(factory: pytest.TempPathFactory, key: SigningKey, *args: str) -> bytes:
    """The bundle of `lineup app pack-mcp ARGS --key KEY --out …` (`ARGS` without `--key`
    and `--out`; a `--` and the server's arguments last), packed once per test session."""
    folder = _session_folder(factory)
    name = hashlib.sha256(json.dumps([key.key_id, *args]).encode()).hexdigest()[:32]
    bundle = folder / f"{name}.lineup"
    with (folder / f"{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not bundle.is_file():
            key_file = folder / f"{name}.key"
            key_file.write_text(key.dumps())
            key_file.chmod(0o600)
            fresh = folder / f"{name}.tmp"
            at = args.index("--") if "--" in args else len(args)
            pack_mcp(*args[:at], "--key", str(key_file), "--out", str(fresh), *args[at:])
            os.rename(fresh, bundle)
    return bundle.read_bytes()


def shared_dev_mcp(
    factory: pytest.TempPathFactory, folder: Path, command: list[str], data_dir: Path
) -> dict[str, str]:
    """The registry entry `dev_mcp(folder, command, data_dir)` answers, the app's folder
    written under `data_dir` (which exists), the server listed once per session."""
    from lineup.supervisor._mcp_probe import dev_mcp

    name = hashlib.sha256(json.dumps([str(folder), *command]).encode()).hexdigest()[:32]
    cached = _session_folder(factory) / f"dev-mcp-{name}"
    with (_session_folder(factory) / f"dev-mcp-{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (cached / "entry.json").is_file():
            shutil.rmtree(cached, ignore_errors=True)  # a listing that did not finish
            (cached / "rt").mkdir(mode=0o700, parents=True)
            entry = dev_mcp(folder, command, cached / "rt")
            (cached / "entry.json").write_text(json.dumps(entry))
    entry = json.loads((cached / "entry.json").read_text())
    kept = Path(entry["manifest"]).parent
    where = data_dir / kept.relative_to(cached / "rt")
    shutil.copytree(kept, where)
    return {**entry, "manifest": str(where / "manifest.json")}


EXAMPLES: Final = Path(__file__).resolve().parents[2] / "examples"


def make_run_catalog(factory: pytest.TempPathFactory) -> Path:
    """The folder of the catalog `make run` offers, built once per test session: the examples
    by `lineup.ops.catalog.build` and each of its `MCP_SERVERS` packed with the catalog's
    arguments for it, both signed by the catalog's one key. The servers are the session's
    shared packs (`shared_pack`), with `MCP_PACK_KEY` as that key: the tests that install the
    same pinned server take the same bundle, and its `npm install`, listing and pack are
    paid once. That `build` packs them itself is `tests/ops/test_catalog.py`'s claim."""
    from lineup.ops.catalog import MCP_SERVERS, build
    from lineup.sdk.bundle import read_header

    folder = _session_folder(factory) / "make-run-catalog"
    with (_session_folder(factory) / "make-run-catalog.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (folder / "built").is_file():
            shutil.rmtree(folder, ignore_errors=True)  # a build that did not finish
            key = folder / "key" / "lineup-dev"
            key.parent.mkdir(mode=0o700, parents=True)
            key.write_text(MCP_PACK_KEY.dumps())
            key.chmod(0o600)
            key.with_name("lineup-dev.pub").write_text(MCP_PACK_KEY.public.dumps())
            build(folder / "catalog", key, EXAMPLES, mcp_servers=())
            for pin, arguments in MCP_SERVERS:
                bundle = shared_pack(factory, MCP_PACK_KEY, *pin.spec_args(), "--", *arguments)
                signed, _ = read_header(bundle)
                name = f"{signed.app_scope}-{signed.version}.lineup"
                (folder / "catalog" / name).write_bytes(bundle)
            (folder / "built").touch()
    return folder / "catalog"


def _session_folder(factory: pytest.TempPathFactory) -> Path:
    base = factory.getbasetemp()
    folder = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "mcp-packs"
    folder.mkdir(mode=0o700, exist_ok=True)
    return folder
