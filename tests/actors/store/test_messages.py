"""The store's protocol module (`actors/store/messages.py`): tags and bounds, no I/O."""

from __future__ import annotations

from typing import Literal, get_origin

import pydantic
import pytest

import lineup.actors.store
from lineup.actors.kernel import REGISTRY, Message
from lineup.actors.store import messages
from lineup.actors.store.messages import (
    ConversationHistoryRequest,
    InboxPutRequest,
    OutboxAppendRequest,
    OutboxPendingRequest,
)

EXPORTS = [getattr(messages, name) for name in messages.__all__]
PROTOCOL = [obj for obj in EXPORTS if isinstance(obj, type)]  # then state literals and bounds


def test_the_protocol_exports_messages_state_literals_and_bounds_only() -> None:
    assert len(PROTOCOL) > 80
    for name, obj in zip(messages.__all__, EXPORTS, strict=True):
        # Named constants callers need: a bound (MAX_FOCUS_STACK), a set of states (FINAL_…).
        constant = name.isupper() and (
            isinstance(obj, int)
            or (isinstance(obj, frozenset) and all(isinstance(v, str) for v in obj))
        )
        assert isinstance(obj, type) or get_origin(obj) is Literal or constant, name


def test_every_store_message_is_tagged_under_store_and_registered() -> None:
    for cls in PROTOCOL:
        assert issubclass(cls, Message)
        assert cls.TYPE.startswith("store."), cls
        assert REGISTRY[cls.TYPE] is cls


def test_every_request_has_a_reply_tagged_after_it() -> None:
    classes = [cls for cls in PROTOCOL if issubclass(cls, Message)]
    assert classes == PROTOCOL  # every exported class is a message, with its tag
    tags = {cls.TYPE for cls in classes}
    requests = [cls for cls in classes if cls.__name__.endswith("Request")]
    assert requests
    for cls in requests:
        assert f"{cls.TYPE}.reply" in tags, cls


def test_the_package_exports_only_the_actor() -> None:
    assert lineup.actors.store.__all__ == ["StoreActor"]


def test_ids_longer_than_200_characters_are_refused() -> None:
    with pytest.raises(pydantic.ValidationError):
        OutboxAppendRequest(outbox_id="x" * 201, conversation_id="c", kind="k", body={})
    with pytest.raises(pydantic.ValidationError):
        InboxPutRequest(app_scope="chat", conversation_id="c-1", delivery_id="", body={})


def test_list_limits_are_bounded() -> None:
    with pytest.raises(pydantic.ValidationError):
        OutboxPendingRequest(limit=0)
    with pytest.raises(pydantic.ValidationError):
        OutboxPendingRequest(limit=1001)


def test_unknown_fields_are_refused_and_messages_are_frozen() -> None:
    with pytest.raises(pydantic.ValidationError):
        OutboxPendingRequest.model_validate({"type": "store.outbox.pending", "sender": "router"})
    request = OutboxPendingRequest()
    with pytest.raises(pydantic.ValidationError):
        request.limit = 5  # type: ignore[misc]  # frozen: the refusal under test


def test_history_pages_are_bounded_at_500_messages() -> None:
    ConversationHistoryRequest(conversation_id="c", limit=500)
    with pytest.raises(pydantic.ValidationError):
        ConversationHistoryRequest(conversation_id="c", limit=501)
