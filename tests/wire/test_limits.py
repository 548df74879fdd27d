"""The wire's limits: every document is either within them or refused with a stable code."""

from __future__ import annotations

import enum
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lineup.actors.kernel import ErrorCode
from lineup.wire import (
    MAX_ARRAY_ITEMS,
    MAX_DEPTH,
    MAX_ENVELOPE_BYTES,
    MAX_OBJECT_KEYS,
    MAX_SAFE_INTEGER,
    WireLimitError,
    check_document,
    decode_json,
)


def nested(depth: int) -> object:
    """`depth` arrays, one inside the other."""
    document: object = []
    for _ in range(depth - 1):
        document = [document]
    return document


def code_of(data: bytes | str) -> ErrorCode:
    with pytest.raises(WireLimitError) as caught:
        decode_json(data)
    return caught.value.code


def test_a_document_at_the_depth_limit_is_accepted_and_one_deeper_is_refused() -> None:
    check_document(nested(MAX_DEPTH))
    with pytest.raises(WireLimitError) as caught:
        check_document(nested(MAX_DEPTH + 1))
    assert caught.value.code is ErrorCode.ENVELOPE_TOO_DEEP


def test_nesting_deeper_than_the_parser_can_recurse_is_too_deep_not_a_crash() -> None:
    assert code_of("[" * 100_000 + "]" * 100_000) is ErrorCode.ENVELOPE_TOO_DEEP


@pytest.mark.parametrize(
    ("document", "code"),
    [
        ("x" * (MAX_ENVELOPE_BYTES + 1), ErrorCode.ENVELOPE_TOO_LARGE),
        ([0] * (MAX_ARRAY_ITEMS + 1), ErrorCode.ENVELOPE_TOO_LARGE),
        ({str(i): 0 for i in range(MAX_OBJECT_KEYS + 1)}, ErrorCode.ENVELOPE_TOO_LARGE),
        (MAX_SAFE_INTEGER + 1, ErrorCode.ENVELOPE_MALFORMED),
        (float("inf"), ErrorCode.ENVELOPE_MALFORMED),
        ({"text": "\ud800"}, ErrorCode.ENVELOPE_MALFORMED),
        ({"\udfff": 1}, ErrorCode.ENVELOPE_MALFORMED),
    ],
)
def test_each_limit_has_its_code(document: object, code: ErrorCode) -> None:
    # Alone, in an array, in an object, and deeper down: every place a value can be found.
    for wrapped in (document, [1, document], {"k": document}, {"a": [{"b": document}]}):
        with pytest.raises(WireLimitError) as caught:
            check_document(wrapped)
        assert caught.value.code is code


def test_objects_nest_to_the_depth_limit_as_arrays_do() -> None:
    document: object = {}
    for _ in range(MAX_DEPTH - 1):
        document = {"k": document}
    check_document(document)
    with pytest.raises(WireLimitError) as caught:
        check_document({"k": document})
    assert caught.value.code is ErrorCode.ENVELOPE_TOO_DEEP


class Word(enum.StrEnum):
    A = "a"


class Tree(dict[str, object]):
    pass


def test_subclasses_of_json_types_are_checked_as_their_base() -> None:
    check_document({Word.A: [Word.A, True, False, None, -MAX_SAFE_INTEGER, 0.5]})
    check_document(Tree(k=Tree(v=1)))
    with pytest.raises(WireLimitError) as caught:
        check_document([Tree(v=float("nan"))])
    assert caught.value.code is ErrorCode.ENVELOPE_MALFORMED
    with pytest.raises(WireLimitError) as caught:
        check_document({"k": object()})
    assert caught.value.code is ErrorCode.ENVELOPE_MALFORMED


@pytest.mark.parametrize(
    ("data", "code"),
    [
        (b"<html><body>Welcome to the hotel Wi-Fi</body></html>", ErrorCode.ENVELOPE_MALFORMED),
        (b'{"a": NaN}', ErrorCode.ENVELOPE_MALFORMED),
        (b"1" * 5000, ErrorCode.ENVELOPE_MALFORMED),  # past Python's int digit limit
        (b'"\xff\xfe"', ErrorCode.ENVELOPE_MALFORMED),
        (b'"\\ud800"', ErrorCode.ENVELOPE_MALFORMED),
        (b" " * (MAX_ENVELOPE_BYTES + 1), ErrorCode.ENVELOPE_TOO_LARGE),
    ],
)
def test_what_is_not_json_within_limits_is_refused_with_a_code(
    data: bytes, code: ErrorCode
) -> None:
    assert code_of(data) is code


REFUSALS = {ErrorCode.ENVELOPE_MALFORMED, ErrorCode.ENVELOPE_TOO_LARGE, ErrorCode.ENVELOPE_TOO_DEEP}
json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(),
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(st.text(), inner, max_size=5),
    max_leaves=60,
)


@given(json_values)
def test_any_document_is_accepted_or_refused_with_a_code_and_what_is_accepted_round_trips(
    document: object,
) -> None:
    try:
        check_document(document)
    except WireLimitError as refused:
        refusal: ErrorCode | None = refused.code
    else:
        refusal = None
    if refusal is not None:
        assert refusal in REFUSALS
        return
    # Within the limits means it encodes as UTF-8 JSON and reads back the same.
    encoded = json.dumps(document, ensure_ascii=False, allow_nan=False).encode()
    assert decode_json(encoded, max_bytes=len(encoded)) == document


@given(st.binary(max_size=300))
def test_any_bytes_decode_or_are_refused_with_a_code(data: bytes) -> None:
    try:
        decode_json(data)
    except WireLimitError as refused:
        refusal: ErrorCode | None = refused.code
    else:
        refusal = None
    assert refusal in {None, ErrorCode.ENVELOPE_MALFORMED, ErrorCode.ENVELOPE_TOO_DEEP}
