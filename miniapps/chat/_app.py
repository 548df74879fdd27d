"""The chat: keeps the IM timeline and shows it through the Shell's trusted components.

The timeline is rebuilt from the runtime (history + inbox) at start and on every refresh, so
nothing that matters lives only in this process. It reaches the Shell as a small view (the
composer) and one item per message: a render puts only the messages that changed since the
last one, so no request grows with the timeline, and a message as large as the wire allows
is shown whole however many large ones came before it. A user message shows as `pending` (the local
echo) as soon as the runtime has stored it, becomes `sent` when the AppServer has taken it, or
`failed` (with a retry) when it refused it for good. An Agent's text that is a short result of
an app sub-session carries that sub-session's id (`app_session_id`), which the runtime checked
and stored with it: the Shell shows it in the sub-session's folded group.

The chat is in one mode at a time (seed 003 §5.1: `im`, `audio`, `video`), which the runtime
records: the user's switch (`mode.switch` from the Shell) is asked of the runtime
(`AppContext.switch_mode`), and the view shows the mode the runtime then tells
(`on_mode_changed`), also when the chat comes back in front or after a restart. Real-time media
is not here: a mode is what the view offers.
"""

from __future__ import annotations

import hashlib
import re
import time
import uuid
from typing import Any, Final

from lineup.facts.modes import MODES
from lineup.sdk import AppContext, LineUpError, MiniApp
from lineup.sdk import protocol as p

__all__ = ["Chat"]

_CLIENT_ID: Final = re.compile(r"[A-Za-z0-9_-]{8,64}")

SHOWN: Final = 200  # the timeline keeps the newest items; older ones stay in history
MAX_TEXT: Final = 64 * 1024
INBOX_PAGE: Final = 500  # deliveries listed per request when (re)loading
HISTORY_PAGE: Final = 500  # history rows asked for per request (the runtime may send fewer)
_FIELDS: Final = ("author", "state", "markdown", "at")
MAX_ITEM_ID: Final = 200  # an item id's length (`sdk.protocol.Id`)


class Chat(MiniApp):
    def __init__(self) -> None:
        self._items: dict[str, dict[str, Any]] = {}
        self._put: dict[str, dict[str, Any]] = {}  # what focus holds of each item, as last put
        # Items that may differ from what focus holds: a render compares these only, not the
        # whole timeline (it runs for every message shown and every state a message takes).
        self._dirty: set[str] = set()
        self._view: dict[str, Any] | None = None  # the view focus holds, as last rendered

    async def start(self, app: AppContext) -> None:
        self.app = app
        await self._reload()

    async def _reload(self) -> None:
        # Focus may have lost what it held (it restarted): everything is put again.
        self._put.clear()
        self._view = None
        # The whole history, a page at a time (a page is cut to the runtime's reply budget, so
        # large messages make short pages), keeping the newest `SHOWN`.
        after = 0
        while history := await self.app.conversation.history(after_seq=after, limit=HISTORY_PAGE):
            for item in history:
                key = _key(item.author, item.message_id)
                self._items[key] = {
                    "id": key,
                    "message_id": item.message_id,
                    "seq": item.seq,
                    "author": item.author,
                    "state": item.state,
                    "markdown": item.markdown,
                    "at": item.at,
                    "app_session_id": item.app_session_id,
                }
            after = history[-1].seq
            self._trim()
        # Everything waiting, a page at a time: shown in one render, then acknowledged.
        waiting: list[p.Delivery] = []
        after = 0
        while page := await self.app.inbox.list(after_seq=after, limit=INBOX_PAGE):
            waiting.extend(page)
            after = page[-1].seq
        for delivery in waiting:
            self._take(delivery)
        self._dirty = set(self._items)  # focus holds nothing we put before
        await self._render()
        if waiting:
            await self.app.inbox.acknowledge_many(waiting)

    def _take(self, delivery: p.Delivery) -> None:
        envelope = delivery.envelope
        if envelope.get("type") != "lineup.v1.text":
            return
        payload = envelope.get("payload") or {}
        key = _key("agent", delivery.delivery_id)
        if key in self._items:
            return
        self._dirty.add(key)
        self._items.setdefault(
            key,
            {
                "id": key,
                "message_id": delivery.delivery_id,
                "seq": delivery.message_seq,  # the conversation's order, as history's
                "author": "agent",
                "state": "received",
                "markdown": str(payload.get("markdown", "")),
                # When the runtime recorded it, as its history says: so it sits among the
                # interaction cards (placed at their own recording) as the Agent sent them,
                # however late this process gets to it.
                "at": delivery.at if delivery.at is not None else time.time(),
                "app_session_id": _app_session_of(payload),
            },
        )

    async def on_deliveries(self, deliveries: tuple[p.Delivery, ...]) -> None:
        # A burst is shown in one render, then acknowledged in one request: shown before it
        # leaves the inbox, and a crash in between shows it again (once: `_take` is by id).
        for delivery in deliveries:
            self._take(delivery)
        await self._render()
        await self.app.inbox.acknowledge_many(deliveries)

    async def on_ui_event(self, event: p.UiEvent) -> None:
        kind = event.event.get("kind")
        if kind == "composer.submit":
            text = event.event.get("text")
            message_id = _client_id(event.event.get("client_id"))
            if _key("user", message_id) in self._items:
                # The Shell resubmitted after a reconnect: this message is already ours.
                await self._render()
            # Blank text is not sent; other text is sent as typed (indentation is Markdown).
            elif isinstance(text, str) and text.strip() and len(text) <= MAX_TEXT:
                await self._send(message_id, text)
        elif kind == "mode.switch":
            mode = event.event.get("mode")
            if mode in MODES and mode != self.app.mode:
                # Recorded by the runtime first; the view changes when it tells the mode.
                await self.app.switch_mode(mode)
        elif kind == "message.retry":
            retried = event.event.get("message_id")
            item = self._items.get(retried) if isinstance(retried, str) else None
            if item is not None and item["state"] == "failed" and item["seq"] is None:
                await self._send(item["message_id"], item["markdown"])  # it was never queued
            elif item is not None and item["state"] == "failed":
                item["state"] = "pending"
                self._dirty.add(item["id"])
                await self._render()
                try:
                    await self.app.conversation.retry(item["message_id"])
                except LineUpError:
                    item["state"] = "failed"
                    self._dirty.add(item["id"])
                    await self._render()

    async def _send(self, message_id: str, markdown: str) -> None:
        key = _key("user", message_id)
        item = {
            "id": key,
            "message_id": message_id,
            "seq": None,
            "author": "user",
            "state": "pending",
            "markdown": markdown,
            "at": time.time(),
        }
        self._items[key] = item
        try:
            receipt = await self.app.conversation.send_text(message_id, markdown)
            item["seq"] = receipt.seq
        except LineUpError:
            item["state"] = "failed"  # never queued: Retry sends it again
        self._dirty.add(key)
        # The local echo shows once the runtime holds the message (a store commit, about a
        # millisecond): `pending` then means it will reach the Agent whatever crashes next,
        # and a message shown once never vanishes on a restart.
        await self._render()

    async def on_conversation_updated(self, event: p.ConversationUpdatedEvent) -> None:
        item = self._items.get(_key("user", event.message_id))
        if item is not None:
            item["state"] = event.state
            self._dirty.add(item["id"])
            await self._render()

    async def on_view_refresh(self) -> None:
        await self._reload()

    async def on_mode_changed(self, event: p.ModeChangedEvent) -> None:
        await self._render()  # the view says the context's mode, now the runtime's

    def _ordered(self) -> list[dict[str, Any]]:
        return sorted(self._items.values(), key=lambda i: (_order(i), i["id"]))

    def _trim(self) -> None:
        if len(self._items) <= SHOWN:
            return
        for item in self._ordered()[:-SHOWN]:
            del self._items[item["id"]]
            self._put.pop(item["id"], None)
            self._dirty.discard(item["id"])

    async def _render(self) -> None:
        """Show what changed: the view if it did, and each message that is new or changed
        since it was last put (focus keeps the newest; the Shell pages through them)."""
        self._trim()
        view = {
            "kind": "chat.timeline",
            "composer": {"enabled": True},
            "mode": self.app.mode,
            "modes": list(MODES),
        }
        if view != self._view:
            await self.app.ui.render(self.app.instance_id, view)
            self._view = view
        dirty = sorted(
            (self._items[k] for k in self._dirty if k in self._items),
            key=lambda i: (_order(i), i["id"]),
        )
        changed = [
            p.ViewItem(id=i["id"], order=_order(i), fields=_fields(i))
            for i in dirty
            if self._put.get(i["id"]) != _fields(i)
        ]
        if changed:
            await self.app.ui.put_items(self.app.instance_id, changed)
            self._put.update((item.id, item.fields) for item in changed)
        # Clean once focus holds them as they are now (one changed during the put stays).
        self._dirty = {
            k
            for k in self._dirty
            if k in self._items and self._put.get(k) != _fields(self._items[k])
        }


def _fields(item: dict[str, Any]) -> dict[str, Any]:
    """What the Shell gets of an item: `app_session_id` only on a sub-session's text."""
    fields = {k: item[k] for k in _FIELDS}
    if item.get("app_session_id") is not None:
        fields["app_session_id"] = item["app_session_id"]
    return fields


def _app_session_of(payload: dict[str, Any]) -> str | None:
    """The sub-session a delivered text names (the runtime took it only for an open one)."""
    context = payload.get("app_session_context")
    session_id = context.get("app_session_id") if isinstance(context, dict) else None
    return session_id if isinstance(session_id, str) and session_id else None


def _key(author: str, message_id: str) -> str:
    """An item's id: the user's messages (the chat's own ids) and the Agent's (ids the Agent
    chose) are two namespaces, so an id in one never hides a message of the other. An Agent's
    id too long for an item id with its prefix is named by its digest."""
    if author == "user":
        return f"user:{message_id}"
    key = f"agent:{message_id}"
    if len(key) <= MAX_ITEM_ID:
        return key
    return "agent#" + hashlib.blake2b(message_id.encode(), digest_size=16).hexdigest()


def _order(item: dict[str, Any]) -> int:
    """Where a message shows: by its runtime sequence; one never queued (no seq) last."""
    seq = item["seq"]
    return p.MAX_ITEM_ORDER if seq is None else int(seq)


def _client_id(raw: object) -> str:
    """The message id of a submit: the Shell's own id for it when it sent a well-formed one,
    so a Shell that resubmits after a lost connection cannot send the message twice (the store
    is idempotent by message id); otherwise a fresh one."""
    if isinstance(raw, str) and _CLIENT_ID.fullmatch(raw):
        return f"user-{raw}"
    return str(uuid.uuid4())
