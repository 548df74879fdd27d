"""The `lineup app` commands that talk to a running runtime or its data dir (the rest are the
SDK's authoring tools): here alone, so that `lineup app ...` picks its side without importing
either (`lineup.supervisor.cli`)."""

from __future__ import annotations

from typing import Final

__all__ = ["COMMANDS"]

COMMANDS: Final = frozenset(
    {
        *("install", "list", "enable", "disable", "rollback", "revoke", "remove", "default"),
        "import-mcp",  # not the registry's: into the data dir (`_mcp_import`)
    }
)
