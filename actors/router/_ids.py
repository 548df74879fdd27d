"""The ids the runtime mints: every outbox row's, which is also its wire message id (issue 11).

Theory of operation
-------------------
No I/O here. Every id the runtime sends to the AppServer starts with `RUNTIME_PREFIX` and is
made here, never taken from an app or the Agent:

- a user's message: `lu:msg:<uuid4 hex>`. What the app passed (`message_id` of
  `conversation.send_text`) is only its client id, a deduplication key inside that app's scope
  (the store keeps it beside the runtime's id: `messages.client_id`), and it never leaves the
  runtime;
- a tool call's rows: `lu:receipt:<call id>:<status>`, `lu:final:<call id>`,
  `lu:progress:<call id>:<ns>`; the inventory's: `lu:inventory:<conversation>:<revision>`. A
  part that would make the id longer than the wire allows is replaced by `#` + its SHA-256
  (a readable call id never starts with `#`, so the two forms never meet).

An Agent's envelope whose id is in this namespace is refused `message_id_conflict` before it
reaches the store (`is_runtime`), so an inbound id never equals one the runtime minted or will
mint; an inbound id that equals an older, app-chosen outbound id is refused by the store.
"""

from __future__ import annotations

import hashlib
import uuid
from typing import Final

__all__ = [
    "RUNTIME_PREFIX",
    "inventory_id",
    "is_runtime",
    "message_id",
    "progress_id",
    "receipt_id",
    "terminal_id",
]

RUNTIME_PREFIX: Final = "lu:"
MAX_ID: Final = 200  # the wire's and the store's longest id


def is_runtime(value: str) -> bool:
    """Whether `value` is in the runtime's namespace: no app or Agent may use it as an id."""
    return value.startswith(RUNTIME_PREFIX)


def message_id() -> str:
    """A fresh id for a user's message (its message row, outbox row and wire envelope)."""
    return f"{RUNTIME_PREFIX}msg:{uuid.uuid4().hex}"


def _id(kind: str, call_id: str, *suffix: str) -> str:
    readable = ":".join((f"{RUNTIME_PREFIX}{kind}", call_id, *suffix))
    if len(readable) <= MAX_ID and not call_id.startswith("#"):
        return readable
    digest = hashlib.sha256(call_id.encode()).hexdigest()
    return ":".join((f"{RUNTIME_PREFIX}{kind}", f"#{digest}", *suffix))


def terminal_id(call_id: str) -> str:
    """The outbox id of a call's one terminal row (its result or its error)."""
    return _id("final", call_id)


def receipt_id(call_id: str, status: str) -> str:
    """The outbox id of a call's receipt of `status` (one per status)."""
    return _id("receipt", call_id, status)


def progress_id(call_id: str, stamp_ns: int) -> str:
    """The outbox id of one progress report of a call."""
    return _id("progress", call_id, str(stamp_ns))


def inventory_id(conversation_id: str, revision: int | str) -> str:
    """The outbox id of the inventory snapshot of `revision` (one per revision)."""
    return _id("inventory", conversation_id, str(revision))
