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
  `lu:progress:<call id>:<ns>`; the inventory's: `lu:inventory:<conversation>:<revision>`;
  an app sub-session's rows: `lu:app_session:<instance id>:opened|closed`; an app's
  context updates: `lu:app_context:<instance id>:<request id>`. A
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
    "app_context_row_id",
    "app_interaction_id",
    "app_session_id",
    "app_session_row_id",
    "interaction_id",
    "inventory_id",
    "is_runtime",
    "is_surface_interaction",
    "message_id",
    "progress_id",
    "receipt_id",
    "surface_interaction_id",
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


def interaction_id(call_id: str) -> str:
    """The interaction an Agent's interactive call asks: one per call, so an envelope of the
    same call again is a repeat of its `ask`."""
    return _id("interaction", call_id)


def app_interaction_id(app_scope: str, instance_id: str, request_id: str) -> str:
    """The interaction a MiniApp's instance asks by its own `request_id`: a retry of the same
    request is a repeat (the app's key is scoped to its app and instance, never shared)."""
    digest = hashlib.sha256("\0".join((app_scope, instance_id, request_id)).encode()).hexdigest()
    return f"{RUNTIME_PREFIX}interaction:app:{digest[:40]}"


def is_surface_interaction(interaction_id: str) -> bool:
    """Whether a Surface asked this interaction (`surface_interaction_id`)."""
    return interaction_id.startswith(f"{RUNTIME_PREFIX}interaction:surface:")


def surface_interaction_id(app_scope: str, instance_id: str, request_id: str) -> str:
    """The interaction an instance's Surface asks by its `request_id`: as the app's own, in a
    space of its own (a Surface's key never names one its app asked, nor the reverse)."""
    key = "\0".join(("surface", app_scope, instance_id, request_id))
    digest = hashlib.sha256(key.encode()).hexdigest()
    return f"{RUNTIME_PREFIX}interaction:surface:{digest[:40]}"


def app_session_id(instance_id: str) -> str:
    """The sub-session of one instance (deterministic: opening it again is a repeat)."""
    return _id("app_session", instance_id)


def continue_id(nonce: str) -> str:
    """The launch id of the user's "Continue" of an ended sub-session (a fresh instance)."""
    return f"{RUNTIME_PREFIX}continue:{nonce}"


def app_context_row_id(instance_id: str, request_id: str) -> str:
    """The outbox id of an app's context update (`lineup.v1.app_session.context`), by the
    Surface's request: a retry of it is a repeat."""
    return _id("app_context", f"{instance_id}:{request_id}")


def app_session_row_id(instance_id: str, event: str) -> str:
    """The outbox id of a sub-session's `opened` / `closed` row."""
    return _id("app_session", instance_id, event)
