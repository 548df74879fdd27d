"""The Shell's stable address per data dir: the port and the token a runtime started again on
the same data dir uses again, so a tab left open reconnects by itself (issue 28).

`<data dir>/shell.json` holds `{"port": …, "token": …}`, owner-only (0600; the data dir is
0700 too): the token is a secret, so it is never printed but in the Shell's link, never in
argv, never logged. A run reads it and listens on that port again; only when that port is taken
does it pick another, and says so (`ShellAddress.note`). `lineup run --new-token` rotates the
token: a tab open with the old one is refused and told to open the new link. A file that is
missing or unreadable is replaced by a new address (a new token).

Reading and writing it are a few hundred bytes, before the tree starts: nothing slower is on
`lineup run`'s way to ready.
"""

from __future__ import annotations

import json
import os
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from ._ports import free_port, reserve_port

__all__ = ["ADDRESS_FILE", "ShellAddress", "shell_address"]

ADDRESS_FILE: Final = "shell.json"
TOKEN_BYTES: Final = 32
_MAX_FILE: Final = 4096


@dataclass(frozen=True)
class ShellAddress:
    port: int
    token: str
    note: str | None = None  # a line for the user: the port the Shell used before was taken


def shell_address(data_dir: Path, *, port: int = 0, new_token: bool = False) -> ShellAddress:
    """The Shell's port (`port` if the user named one) and token for a run on `data_dir`, saved
    there for the next run. Never raises for the file: an address that cannot be read is a new
    one, one that cannot be written lasts this run only."""
    path = data_dir / ADDRESS_FILE
    saved_port, saved_token = _read(path)
    token = saved_token if saved_token is not None and not new_token else _new_token()
    note = None
    if port == 0 and saved_port is not None:
        if reserve_port(saved_port):
            port = saved_port
        else:
            port = free_port()
            note = (
                f"the Shell's port {saved_port} is taken, so it listens on {port} this time: "
                "a tab left open on the old port needs the new link"
            )
    elif port == 0:
        port = free_port()
    if (port, token) != (saved_port, saved_token):
        _write(path, port, token)
    return ShellAddress(port, token, note)


def _new_token() -> str:
    return secrets.token_urlsafe(TOKEN_BYTES)


def _read(path: Path) -> tuple[int | None, str | None]:
    try:
        with path.open("rb") as file:
            document = json.loads(file.read(_MAX_FILE))
    except (OSError, ValueError):
        return None, None
    if not isinstance(document, dict):
        return None, None
    port, token = document.get("port"), document.get("token")
    valid_port = port if isinstance(port, int) and 0 < port < 65536 else None
    # Only a token this module could have made: URL-safe base64 of TOKEN_BYTES bytes.
    valid_token = (
        token
        if isinstance(token, str)
        and len(token) >= TOKEN_BYTES
        and all(c.isascii() and (c.isalnum() or c in "-_") for c in token)
        else None
    )
    return valid_port, valid_token


def _write(path: Path, port: int, token: str) -> None:
    """Replace the file atomically, owner-only from its first byte."""
    temporary = path.with_name(f".{ADDRESS_FILE}.{os.getpid()}")
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.fchmod(fd, 0o600)  # a leftover of a crashed run keeps no other mode
        with os.fdopen(fd, "w") as file:
            json.dump({"port": port, "token": token}, file)
        os.replace(temporary, path)
    except OSError:
        temporary.unlink(missing_ok=True)  # this run keeps its address; the next makes one
