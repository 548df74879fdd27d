"""The app's conversation: the user's text it sends the Agent, its history, and the state of
what it sent (`Conversation`)."""

from typing import Literal

from pydantic import Field

from lineup.actors.kernel import Message

from .common import Id

__all__ = [
    "MAX_TEXT",
    "ConversationHistoryReply",
    "ConversationHistoryRequest",
    "ConversationItem",
    "ConversationRetryRequest",
    "ConversationSendTextRequest",
    "ConversationUpdatedEvent",
]

MAX_TEXT = 64 * 1024


class ConversationItem(Message):
    """One message of the app's conversation, as the IM shows it. `app_session_id`: the app
    sub-session an Agent's text is a short result of (the runtime checked it was open then)."""

    type: Literal["miniapp.conversation.item"] = "miniapp.conversation.item"
    message_id: Id
    seq: int
    author: Literal["agent", "user"]
    state: Literal["received", "pending", "sent", "failed"]
    markdown: str
    at: float
    app_session_id: Id | None = None


class ConversationSendTextRequest(Message):
    """Send the user's text to the Agent. Idempotent by `message_id` (the app chooses it)."""

    type: Literal["router.sdk.conversation.send_text"] = "router.sdk.conversation.send_text"
    message_id: Id
    markdown: str = Field(min_length=1, max_length=MAX_TEXT)


class ConversationRetryRequest(Message):
    type: Literal["router.sdk.conversation.retry"] = "router.sdk.conversation.retry"
    message_id: Id


class ConversationHistoryRequest(Message):
    type: Literal["router.sdk.conversation.history"] = "router.sdk.conversation.history"
    after_seq: int = Field(default=0, ge=0)
    limit: int = Field(default=200, ge=1, le=500)


class ConversationHistoryReply(Message):
    type: Literal["router.sdk.conversation.history.reply"] = "router.sdk.conversation.history.reply"
    items: tuple[ConversationItem, ...]


class ConversationUpdatedEvent(Message):
    """Runtime → app: an outbound message changed state (the AppServer took it, or refused)."""

    type: Literal["miniapp.conversation.updated"] = "miniapp.conversation.updated"
    message_id: Id
    state: Literal["pending", "sent", "failed"]
    code: str | None = None
