"""What the transport hands the router of a sync page (`actors/transport/_actor.py`, `batches`):
each envelope within the wire's limits parsed once, by the wire's own model, or its refusal in
its place, in the page's order; what breaks the limits stays the transport's own refusal. And
the parsed models cross a bus frame as themselves, and the sync cursor rides with the last
batch, for the router to commit with the page."""

from __future__ import annotations

import json
from typing import Any

import trio
import trio.lowlevel
from hypothesis import given, settings
from hypothesis import strategies as st

from lineup import wire
from lineup.actors.kernel import ErrorCode
from lineup.actors.router.messages import (
    InboundEnvelopesReply,
    InboundEnvelopesRequest,
    RefusedEnvelope,
)
from lineup.actors.store.messages import CursorGetReply, CursorGetRequest
from lineup.actors.transport._actor import BATCH_ENVELOPES, TransportActor, batches, inbound
from lineup.actors.transport.messages import AppServerSession
from lineup.wire import MAX_DEPTH, Admitted, SyncPage, decode_sync_page

CONVERSATION, AGENT = "conv-1", "agent-1"


def text(message_id: str, **overrides: Any) -> dict[str, Any]:
    envelope: dict[str, Any] = {
        "v": 1,
        "id": message_id,
        "type": wire.TEXT,
        "conversation_id": CONVERSATION,
        "sender": {"kind": "agent", "id": AGENT},
        "timestamp": "2026-11-30T00:00:00.000Z",
        "payload": {"markdown": f"hello {message_id}"},
    }
    envelope.update(overrides)
    return envelope


def call(call_id: str) -> dict[str, Any]:
    return text(
        f"env-{call_id}",
        type=wire.TOOL_CALL,
        payload={
            "call_id": call_id,
            "tool": "probe.echo",
            "inventory_revision": "1",
            "input": {"n": 1.5, "deep": [[{"k": None}]]},
            "app_session_context": {"app_session_id": "lu:app_session:probe:1"},
        },
    )


def page(*envelopes: object) -> bytes:
    return json.dumps({"messages": list(envelopes), "cursor": "c1"}).encode()


def deep(depth: int) -> object:
    nested: object = "x"
    for _ in range(depth):
        nested = [nested]
    return nested


def handed_over(body: bytes) -> list[object]:
    return [item for batch in batches(decode_sync_page(body).items) for item in batch]


def test_each_envelope_goes_parsed_or_as_its_refusal_in_its_place_in_the_pages_order() -> None:
    items = handed_over(
        page(
            text("t-1"),
            text("odd-1", type="lineup.v1.shell.exec"),
            text("deep-1", payload={"markdown": "x", "n": deep(MAX_DEPTH + 5)}),
            text("v2-1", v=2),
            text("shape-1", extra_field=1),
            call("c-1"),
        )
    )
    assert [type(item) for item in items] == [
        wire.TextEnvelope,
        RefusedEnvelope,
        RefusedEnvelope,
        RefusedEnvelope,
        wire.ToolCallEnvelope,
    ]  # the too deep one is the transport's own refusal: never handed on
    refused = [
        (item.code, item.message_id, item.message_type)
        for item in items
        if isinstance(item, RefusedEnvelope)
    ]
    assert refused == [
        (ErrorCode.ENVELOPE_TYPE_UNKNOWN, "odd-1", "lineup.v1.shell.exec"),
        (ErrorCode.UNSUPPORTED_VERSION, "v2-1", wire.TEXT),
        (ErrorCode.ENVELOPE_MALFORMED, "shape-1", wire.TEXT),
    ]
    tool_call = items[-1]
    assert isinstance(tool_call, wire.ToolCallEnvelope)
    assert tool_call.payload.call_id == "c-1"
    assert tool_call.payload.model_extra == {
        "app_session_context": {"app_session_id": "lu:app_session:probe:1"}
    }


def test_a_refusal_carries_what_is_safe_to_audit_never_the_body() -> None:
    (admitted,) = decode_sync_page(page(text("secret-1", v="1", note="never audited"))).items
    assert isinstance(admitted, Admitted)
    refused = inbound(admitted)
    assert isinstance(refused, RefusedEnvelope)
    assert (refused.code, refused.message_id) == (ErrorCode.ENVELOPE_MALFORMED, "secret-1")
    assert "never audited" not in refused.model_dump_json()


def test_the_parsed_envelopes_cross_a_bus_frame_as_the_same_models() -> None:
    items = handed_over(page(text("t-1", app_scope="probe", seq=7), call("c-1"), text("x", v=3)))
    request = InboundEnvelopesRequest(
        conversation_id=CONVERSATION, agent_id=AGENT, envelopes=tuple(items)
    )
    # As the bus writes a frame and reads it back (`bus._to_json`, then the validator).
    frame = request.__pydantic_serializer__.to_json(request)
    assert InboundEnvelopesRequest.model_validate(json.loads(frame)) == request


def test_a_page_goes_to_the_router_in_batches_of_at_most_its_bound_in_order() -> None:
    ids = [f"t-{n}" for n in range(2 * BATCH_ENVELOPES + 1)]
    sent = list(batches(decode_sync_page(page(*(text(i) for i in ids))).items))
    assert [len(batch) for batch in sent] == [BATCH_ENVELOPES, BATCH_ENVELOPES, 1]
    assert [
        item.id for batch in sent for item in batch if isinstance(item, wire.TextEnvelope)
    ] == ids


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(key=st.sampled_from(sorted(text("m"))), value=json_values)
def test_any_document_within_the_limits_is_handed_on_parsed_or_refused_with_a_code(
    key: str, value: object
) -> None:
    document = text("m")
    document[key] = value
    (item,) = decode_sync_page(page(document)).items
    if not isinstance(item, Admitted):
        return  # the transport's own refusal (the limits): never handed on
    handed = inbound(item)
    if isinstance(handed, RefusedEnvelope):
        assert isinstance(handed.code, ErrorCode)
    else:
        assert handed.type in wire.AGENT_TYPES


class _Router:
    """A bus whose router persists the cursor when it comes with texts (as `_inbound`)."""

    def __init__(self) -> None:
        self.requests: list[InboundEnvelopesRequest] = []

    async def request(self, peer: str, msg: InboundEnvelopesRequest, **_: Any) -> Any:
        self.requests.append(msg)
        ends_with_text = isinstance(msg.envelopes[-1], wire.TextEnvelope)
        return InboundEnvelopesReply(
            outcomes=(), cursor_saved=msg.cursor is not None and ends_with_text
        )


def handing_over(*envelopes: object, cursor: str | None) -> tuple[bool, list[str | None]]:
    """What `_hand_over` answers for a page, and the cursor each of its batches carried."""
    transport = TransportActor.__new__(TransportActor)
    router = _Router()
    transport.bus = router  # type: ignore[assignment]
    transport._handed = trio.Event()
    transport._session = AppServerSession(
        user_id="u-1", agent_id=AGENT, conversation_id=CONVERSATION
    )
    saved = trio.run(transport._hand_over, decode_sync_page(page(*envelopes)).items, cursor)
    return saved, [request.cursor for request in router.requests]


def test_the_cursor_goes_with_the_last_batch_and_the_router_says_if_it_kept_it() -> None:
    texts = [text(f"t-{n}") for n in range(BATCH_ENVELOPES + 1)]
    assert handing_over(*texts, cursor="c9") == (True, [None, "c9"])
    assert handing_over(text("t-1"), call("c-1"), cursor="c9") == (False, ["c9"])
    assert handing_over(text("t-1"), cursor=None) == (False, [None])


def test_a_page_that_finds_the_sync_loop_idle_goes_to_the_router_before_the_next_poll() -> None:
    # Otherwise the next long poll's HTTP exchange (and the AppServer's work on it) comes
    # first, on the message's way to the chat.
    order: list[str] = []
    pages = 8

    class Client:
        calls = 0

        async def sync(self, token: str, cursor: str, wait_ms: int) -> SyncPage:
            self.calls += 1
            order.append(f"poll {self.calls}")
            if self.calls > pages:
                await trio.sleep_forever()
            return decode_sync_page(page(text(f"t-{self.calls}")))

    class Bus:
        async def request(self, peer: str, msg: Any, **_: Any) -> Any:
            if isinstance(msg, CursorGetRequest):
                return CursorGetReply(name=msg.name, value=None)
            assert isinstance(msg, InboundEnvelopesRequest)
            ids = ",".join(e.id for e in msg.envelopes if isinstance(e, wire.TextEnvelope))
            order.append(f"router {ids}")
            return InboundEnvelopesReply(outcomes=(), cursor_saved=True)

    transport = TransportActor.__new__(TransportActor)
    transport.bus = Bus()  # type: ignore[assignment]
    transport._client = Client()  # type: ignore[assignment]
    transport._session = AppServerSession(
        user_id="u-1", agent_id=AGENT, conversation_id=CONVERSATION
    )
    transport.state, transport.reason, transport._failures = "online", None, 0
    transport._token = "t"
    transport._state_changed = transport._handed = trio.Event()

    async def run() -> None:
        with trio.fail_after(5):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(transport._sync_loop)
                last = f"t-{pages}"
                while f"poll {pages + 1}" not in order or not any(
                    step.startswith("router") and step.endswith(last) for step in order
                ):
                    await trio.lowlevel.checkpoint()  # lets the loops run (not a timing)
                nursery.cancel_scope.cancel()

    trio.run(run)
    expected = ["poll 1"] + [
        step for n in range(1, pages + 1) for step in (f"router t-{n}", f"poll {n + 1}")
    ]
    assert order == expected
