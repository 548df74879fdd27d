from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lineup.ops.devserver import WireErrorCode
from lineup.ops.devserver._protocol import (
    MAX_ENVELOPE_BYTES,
    MAX_TIMEOUT_MS,
    WireError,
    decode_cursor,
    encode_cursor,
    parse_timeout_ms,
    validate_envelope,
    validate_idempotency_key,
)

MINE = frozenset({"conv-a"})


def _body(**fields: Any) -> bytes:
    envelope: dict[str, Any] = {"v": 1, "type": "lineup.v1.text", "conversation_id": "conv-a"}
    envelope.update(fields)
    return json.dumps(envelope).encode()


def _code(body: bytes) -> WireErrorCode:
    with pytest.raises(WireError) as caught:
        validate_envelope(body, allowed_conversations=MINE)
    return caught.value.code


def test_a_valid_envelope_keeps_its_id_and_gets_a_timestamp() -> None:
    envelope, message_id = validate_envelope(_body(id="m-1"), allowed_conversations=MINE)
    assert message_id == "m-1"
    assert envelope["id"] == "m-1"
    assert isinstance(envelope["timestamp"], str)


def test_an_envelope_without_an_id_gets_a_generated_one() -> None:
    envelope, message_id = validate_envelope(_body(), allowed_conversations=MINE)
    assert message_id
    assert envelope["id"] == message_id


@pytest.mark.parametrize(
    "body",
    [
        b"not json",
        b"[1, 2]",
        _body(v=2),
        _body(v=True),
        _body(v="1"),
        _body(type=3),
        _body(type=""),
        _body(conversation_id=None),
        _body(payload=[1]),
        _body(id=7),
        _body(id=""),
    ],
)
def test_a_malformed_envelope_is_refused_as_invalid_envelope(body: bytes) -> None:
    assert _code(body) is WireErrorCode.INVALID_ENVELOPE


def test_a_foreign_conversation_is_refused_as_forbidden_conversation() -> None:
    assert _code(_body(conversation_id="conv-b")) is WireErrorCode.FORBIDDEN_CONVERSATION


def test_an_envelope_over_256_kib_is_refused_as_too_large() -> None:
    body = _body(payload={"markdown": "x" * MAX_ENVELOPE_BYTES})
    assert _code(body) is WireErrorCode.TOO_LARGE


def test_wire_errors_carry_their_http_status() -> None:
    assert WireError(WireErrorCode.TOO_LARGE).status == 413
    assert WireError(WireErrorCode.FORBIDDEN_CONVERSATION).status == 403
    assert WireError(WireErrorCode.UNAUTHORIZED).status == 401
    assert WireError(WireErrorCode.UNAVAILABLE).status == 503


def test_an_empty_or_absent_cursor_means_from_the_start() -> None:
    assert decode_cursor(None) == 0
    assert decode_cursor("") == 0


@given(st.integers(min_value=0, max_value=10**17))
def test_every_encoded_cursor_decodes_to_its_position(position: int) -> None:
    assert decode_cursor(encode_cursor(position)) == position


@pytest.mark.parametrize("raw", ["-1", "abc", "1.5", "٣", "9" * 19])
def test_a_malformed_cursor_is_refused_as_invalid_cursor(raw: str) -> None:
    with pytest.raises(WireError) as caught:
        decode_cursor(raw)
    assert caught.value.code is WireErrorCode.INVALID_CURSOR


def test_the_long_poll_timeout_defaults_to_zero_and_is_capped() -> None:
    assert parse_timeout_ms(None) == 0
    assert parse_timeout_ms("250") == 250
    assert parse_timeout_ms(str(MAX_TIMEOUT_MS * 10)) == MAX_TIMEOUT_MS


@pytest.mark.parametrize("raw", ["-5", "soon", "1e3"])
def test_a_malformed_timeout_is_refused_as_invalid_timeout(raw: str) -> None:
    with pytest.raises(WireError) as caught:
        parse_timeout_ms(raw)
    assert caught.value.code is WireErrorCode.INVALID_TIMEOUT


@pytest.mark.parametrize("raw", [None, "", "k" * 257])
def test_a_missing_or_oversized_idempotency_key_is_refused(raw: str | None) -> None:
    with pytest.raises(WireError) as caught:
        validate_idempotency_key(raw)
    assert caught.value.code is WireErrorCode.IDEMPOTENCY_KEY_REQUIRED


@given(st.binary(max_size=200))
def test_no_byte_string_crashes_validation(body: bytes) -> None:
    try:
        envelope, message_id = validate_envelope(body, allowed_conversations=MINE)
    except WireError:
        return
    assert envelope["conversation_id"] in MINE
    assert envelope["v"] == 1
    assert message_id == envelope["id"]
