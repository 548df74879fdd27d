"""The runtime's facts the fakes check that the SDK may not import — bounds, names, and who may
draw what: each is defined inside the actor that enforces it (the SDK imports no actor's
internals), not yet in `lineup.facts` or the SDK's protocol. They are copied here, in this one
module, and `tests/sdk/test_testkit.py` compares every copy with its definition, so a change
there fails a test until this follows.
The bounds that have an importable definition (`protocol.MAX_VIEW_BYTES`,
`protocol.MAX_SURFACE_STATE_BYTES`, `protocol.MAX_ARTIFACT_BYTES`, …) are imported where used.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

from lineup.facts.scopes import CHAT

__all__ = [
    "HISTORY_REPLY_BYTES",
    "ITEM_COMPONENTS",
    "MAX_APP_ARTIFACTS",
    "MAX_APP_ARTIFACT_BYTES",
    "MAX_JSON_DEPTH",
    "MAX_SESSION_DATA_BYTES",
    "MAX_VIEW_KEYS",
    "RUNTIME_KINDS_PREFIX",
    "SURFACE_PREFIX",
    "SURFACE_VIEW_KIND",
    "TRUSTED_KINDS",
]

MAX_VIEW_KEYS: Final = 64  # focus: `actors.focus._views.MAX_VIEW_KEYS`
# A history page's budget: the store's `actors.store._rows.REPLY_BODY_BUDGET`.
HISTORY_REPLY_BYTES: Final = 512 * 1024
# Compact UTF-8 JSON, nested objects and arrays: the store's `actors.store._fields`.
MAX_SESSION_DATA_BYTES: Final = 256 * 1024
MAX_JSON_DEPTH: Final = 32
# One app's artifacts, in total and in number: the gateway's `actors.gateway._artifacts`.
MAX_APP_ARTIFACT_BYTES: Final = 32 * 1024 * 1024
MAX_APP_ARTIFACTS: Final = 1000
# A Surface is named after its instance: focus's `actors.focus._surfaces.SURFACE_PREFIX`.
SURFACE_PREFIX: Final = "lu:surface:"
SURFACE_VIEW_KIND: Final = "lineup.surface"  # the view focus makes of one: its `VIEW_KIND`
# Focus's trust (`actors.focus._views`): a trusted view kind → the app that ships its
# component; the trusted components that show items; the prefix of the kinds focus makes.
TRUSTED_KINDS: Final[Mapping[str, str]] = {
    "chat.timeline": CHAT,
    "task.dashboard": "task-dashboard",
}
ITEM_COMPONENTS: Final = frozenset({"chat.timeline"})
RUNTIME_KINDS_PREFIX: Final = "lineup."
