"""The reference AppServer (DESIGN §12): a real HTTP server with its own SQLite file.

`serve(config)` runs it inside a trio program; `DevServerActor` runs it in a supervised tree;
`lineup devserver` (`cli.main`) runs it in the foreground. Defaults: user `demo` / password
`demo` (user_id `user-demo`), agent `demo-agent` / secret `demo-secret`, conversation
`conv-demo`, `127.0.0.1:8787`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lineup._lazy import exports

from ._config import (
    DEFAULT_AGENT_ID,
    DEFAULT_AGENT_SECRET,
    DEFAULT_CONVERSATION_ID,
    DEFAULT_PASSWORD,
    DEFAULT_USER_ID,
    DEFAULT_USERNAME,
    AgentAccount,
    DevServerConfig,
    UserAccount,
)

if TYPE_CHECKING:
    from ._db import StoreError
    from ._protocol import MAX_ENVELOPE_BYTES, MAX_SYNC_BATCH, MAX_TIMEOUT_MS, WireErrorCode
    from ._serve import serve
    from .actor import DevServerActor

# The server itself (its HTTP server, apsw, the wire) is exported lazily: the demo Agent and its
# tests take only the defaults above, and must not load an HTTP server with them.
_LAZY = {
    "StoreError": "._db",
    "MAX_ENVELOPE_BYTES": "._protocol",
    "MAX_SYNC_BATCH": "._protocol",
    "MAX_TIMEOUT_MS": "._protocol",
    "WireErrorCode": "._protocol",
    "serve": "._serve",
    "DevServerActor": ".actor",
}


__getattr__ = exports(__name__, _LAZY)

__all__ = [
    "DEFAULT_AGENT_ID",
    "DEFAULT_AGENT_SECRET",
    "DEFAULT_CONVERSATION_ID",
    "DEFAULT_PASSWORD",
    "DEFAULT_USERNAME",
    "DEFAULT_USER_ID",
    "MAX_ENVELOPE_BYTES",
    "MAX_SYNC_BATCH",
    "MAX_TIMEOUT_MS",
    "AgentAccount",
    "DevServerActor",
    "DevServerConfig",
    "StoreError",
    "UserAccount",
    "WireErrorCode",
    "serve",
]
