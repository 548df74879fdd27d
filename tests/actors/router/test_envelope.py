"""The stateless filters of the inbound chain: every malformed envelope gets its stable code."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lineup.actors.kernel import ErrorCode
from lineup.actors.router._envelope import (
    MAX_ENVELOPE_BYTES,
    EnvelopeRejected,
    RuntimeEnvelope,
    admit_document,
)

CONVERSATION = "conv-1"
AGENT = "agent-1"


def text(**overrides: Any) -> dict[str, Any]:
    envelope: dict[str, Any] = {
        "v": 1,
        "id": "m1",
        "type": "lineup.v1.text",
        "conversation_id": CONVERSATION,
        "sender": {"kind": "agent", "id": AGENT},
        "timestamp": "2026-11-30T00:00:00+00:00",
        "payload": {"markdown": "hello"},
    }
    envelope.update(overrides)
    return envelope


def refusal(raw: object) -> ErrorCode:
    with pytest.raises(EnvelopeRejected) as rejected:
        admit_document(raw, conversation_id=CONVERSATION, agent_id=AGENT)
    return rejected.value.code


def test_a_legacy_text_without_scope_belongs_to_chat_in_its_conversation() -> None:
    envelope = admit_document(text(), conversation_id=CONVERSATION, agent_id=AGENT)
    assert isinstance(envelope, RuntimeEnvelope)
    assert envelope.scope.app_scope == "chat"
    assert envelope.target.app_scope == "chat"
    assert envelope.scope.conversation_id == CONVERSATION
    assert envelope.sender.kind == "agent"


def test_an_envelope_with_a_scope_keeps_it() -> None:
    envelope = admit_document(
        text(app_scope="task-dashboard", instance_id="i1"),
        conversation_id=CONVERSATION,
        agent_id=AGENT,
    )
    assert envelope.scope.app_scope == "task-dashboard"
    assert envelope.scope.instance_id == "i1"


def test_the_appservers_seq_becomes_the_correlation_sequence() -> None:
    envelope = admit_document(text(seq=7), conversation_id=CONVERSATION, agent_id=AGENT)
    assert envelope.correlation is not None
    assert envelope.correlation.sequence == 7


@pytest.mark.parametrize(
    ("raw", "code"),
    [
        (text(v=2), ErrorCode.UNSUPPORTED_VERSION),
        (text(v="1"), ErrorCode.ENVELOPE_MALFORMED),
        (text(type="lineup.v1.shell.exec"), ErrorCode.ENVELOPE_TYPE_UNKNOWN),
        (text(conversation_id=None), ErrorCode.SCOPE_MISSING),
        (text(conversation_id="conv-other"), ErrorCode.CONVERSATION_MISMATCH),
        (text(sender={"kind": "agent", "id": "someone-else"}), ErrorCode.SENDER_MISMATCH),
        (text(sender={"kind": "user", "id": AGENT}), ErrorCode.SENDER_MISMATCH),
        (text(payload={"markdown": "x" * MAX_ENVELOPE_BYTES}), ErrorCode.ENVELOPE_TOO_LARGE),
        (text(extra_field=1), ErrorCode.ENVELOPE_MALFORMED),
        (text(payload="not an object"), ErrorCode.ENVELOPE_MALFORMED),
        (text(id=""), ErrorCode.ENVELOPE_MALFORMED),
        ([], ErrorCode.ENVELOPE_MALFORMED),
        ("lineup.v1.text", ErrorCode.ENVELOPE_MALFORMED),
    ],
)
def test_each_malformed_envelope_gets_its_stable_code(raw: object, code: ErrorCode) -> None:
    assert refusal(raw) is code


def test_a_missing_version_is_malformed() -> None:
    raw = text()
    del raw["v"]
    assert refusal(raw) is ErrorCode.ENVELOPE_MALFORMED


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=20),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=4)
    ),
    max_leaves=20,
)


@settings(max_examples=300, deadline=None)
@given(key=st.sampled_from(sorted(text())), value=json_values)
def test_any_mutation_of_a_field_is_admitted_whole_or_refused_with_a_code(
    key: str, value: object
) -> None:
    raw = copy.deepcopy(text())
    raw[key] = value
    code: ErrorCode | None
    try:
        envelope = admit_document(raw, conversation_id=CONVERSATION, agent_id=AGENT)
    except EnvelopeRejected as rejected:
        code = rejected.code
    else:
        code = None
    if code is not None:
        assert isinstance(code, ErrorCode)
        return
    # Admitted: then it is exactly what the filters promise.
    assert envelope.scope.conversation_id == CONVERSATION
    assert envelope.sender.id == AGENT
    assert envelope.type in {
        "lineup.v1.text",
        "lineup.v1.tool.call",
        "lineup.v1.interaction.dismiss",
    }


@settings(max_examples=300, deadline=None)
@given(raw=json_values)
def test_any_json_value_is_refused_with_a_code_never_an_exception(raw: object) -> None:
    assert isinstance(refusal(raw), ErrorCode)
