"""The secrets of imported MCP servers: each server's `env` values, owner-only in the data dir.

Theory of operation
-------------------
A desktop host's `mcpServers` block gives a server its API keys in `env`
(`lineup app import-mcp`, `_mcp_import`). LineUp keeps them in one file per app,
`<data dir>/secrets/mcp/<scope>.json` (the folders 0700, the file 0600, written to a temporary
name with O_EXCL and renamed, so no reader ever sees half of one), beside the server they
belong to: its command and folder as the import wrote them in its manifest.

They leave that file only for that server's process: when the supervisor starts the app
(`_miniapps.MiniApps.start`), `env_for` reads them, and only if the command and folder focus
asks for are the ones they were stored with (an app of the same scope installed later from a
bundle runs another command, and gets nothing). They ride in the one boot message of that
process (supervisor → zygote → child, never the bus between actors), the sandbox scrubs the
child's own environment as for every MiniApp, and the adapter hands them to its server alone
(`StdioServerParameters(env=...)`). They are never in the manifest, argv, a log line or an
audit row; the names of the variables are not secret, their values are.

A file that is not ours, not a regular file, or readable by anyone else is refused
(`SecretsUnsafe`), not used: the server does not start without what it was imported with.
"""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

__all__ = ["MAX_SECRETS_FILE", "SecretsUnsafe", "env_for", "forget", "secrets_dir", "store"]

MAX_SECRETS_FILE: Final = 256 * 1024


class SecretsUnsafe(ValueError):
    """The app's secrets file is not owner-only, not ours, or not a regular file."""


def secrets_dir(data_dir: Path) -> Path:
    """The folder of the MCP servers' secrets (0700), the one place their values are."""
    return data_dir / "secrets" / "mcp"


def _private_dir(path: Path) -> Path:
    for folder in (path.parent, path):
        folder.mkdir(mode=0o700, exist_ok=True)
        folder.chmod(0o700)  # one made before, with a looser umask, is made private
    return path


def store(
    data_dir: Path, scope: str, env: Mapping[str, str], command: Sequence[str], folder: str
) -> None:
    """Keep `env` for the app `scope`, bound to its server's `command` and `folder`. An empty
    `env` removes the file (a re-import without secrets keeps none)."""
    if not env:
        forget(data_dir, scope)
        return
    where = _private_dir(secrets_dir(data_dir))
    body = json.dumps({"command": list(command), "folder": folder, "env": dict(env)}).encode()
    temporary = where / f".{scope}.json.{os.getpid()}"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        with open(fd, "wb", closefd=True) as file:
            file.write(body)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, where / f"{scope}.json")
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def forget(data_dir: Path, scope: str) -> None:
    """Remove the app's secrets, if it has any."""
    (secrets_dir(data_dir) / f"{scope}.json").unlink(missing_ok=True)


def env_for(
    data_dir: Path, scope: str, command: Sequence[str], folder: str
) -> dict[str, str] | None:
    """The env values kept for `scope`, if the server asked for is the one they were kept for
    (`command`, `folder`); None when there are none for it. Raises SecretsUnsafe."""
    try:
        fd = os.open(
            secrets_dir(data_dir) / f"{scope}.json", os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK
        )
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise SecretsUnsafe(exc.strerror or "unreadable") from None
    with open(fd, "rb") as file:
        info = os.fstat(file.fileno())
        if not stat.S_ISREG(info.st_mode):
            raise SecretsUnsafe("not a regular file")
        if info.st_uid != os.getuid() or info.st_mode & 0o077:
            raise SecretsUnsafe("not owner-only")
        raw = file.read(MAX_SECRETS_FILE + 1)
    if len(raw) > MAX_SECRETS_FILE:
        raise SecretsUnsafe("too large")
    try:
        kept: Any = json.loads(raw)
    except ValueError:
        raise SecretsUnsafe("not JSON") from None
    if not isinstance(kept, dict) or not isinstance(kept.get("env"), dict):
        raise SecretsUnsafe("malformed")
    if kept.get("command") != list(command) or kept.get("folder") != folder:
        return None  # another server under this scope: not its secrets
    env = kept["env"]
    if not all(isinstance(k, str) and isinstance(v, str) for k, v in env.items()):
        raise SecretsUnsafe("malformed")
    return dict(env)
