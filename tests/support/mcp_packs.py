"""`lineup app pack-mcp` for the tests: run as a user runs it, and, for the tests that only need
its bundle, once per test session.

Theory of operation
-------------------
`pack_mcp(ARGS)` runs the real CLI in its own process and answers the bundle it wrote. Packing
a published server costs an `npm install` and a sandboxed listing (seconds, more under load),
and several tests need the same pinned server packed the same way: `shared_pack(factory, key,
ARGS)` packs it once per test session and hands every later caller the same bytes.

xdist's workers are separate processes of one session: they share the parent of their base
temporary folders (`popen-gwN/..`, a folder of this session alone, which pytest's own clean-up
removes with the session's other temporary folders), so the bundles are kept there, one file
per pack named by a digest of everything the pack depends on that a test chooses (the signing
key and the arguments: the pin, its integrity, the server's own arguments). A file lock per
pack makes the first caller pack it and the others wait; the bundle is written under a
temporary name and renamed, so a killed pack leaves nothing a later caller would take. Without
xdist the session's own base folder is used. A bundle is never reused across sessions: LineUp's
code and npm's resolution of a pin's dependencies may have changed in between.

A test whose claim is the pack (what pack-mcp writes) may still take the shared bundle: it
was written by the real pack-mcp, in this session, with this code and these arguments.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Final

import pytest

from lineup.sdk.bundle import SigningKey

PACK_TIMEOUT: Final = 300.0  # one pack: npm install, the listing, the pack
# The key of the shared packs the tests install: one key, so that tests asking for the same
# server with the same arguments share its one pack.
MCP_PACK_KEY: Final = SigningKey(b"\x31" * 32)


def pack_mcp(*args: str) -> bytes:
    """`lineup app pack-mcp ARGS` in its own process; the bundle it wrote (`--out`)."""
    out = Path(args[args.index("--out") + 1])
    done = subprocess.run(
        [sys.executable, "-m", "lineup", "app", "pack-mcp", *args],
        capture_output=True,
        text=True,
        timeout=PACK_TIMEOUT,
        check=False,
    )
    assert done.returncode == 0, done.stderr
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


def _session_folder(factory: pytest.TempPathFactory) -> Path:
    base = factory.getbasetemp()
    folder = (base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base) / "mcp-packs"
    folder.mkdir(mode=0o700, exist_ok=True)
    return folder
