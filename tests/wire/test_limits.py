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
    encoded_size,
)
from lineup.wire._limits import check_encoded


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


def outcome(check: object, *args: object) -> ErrorCode | int:
    """The code `check(*args)` refuses with, or what it returns when it accepts."""
    try:
        returned = check(*args)  # type: ignore[operator]
    except WireLimitError as refused:
        return refused.code
    return int(returned) if returned is not None else 0


def checked_then_measured(document: object, max_bytes: int) -> ErrorCode | int:
    """What a view's check did before `check_encoded`: the document's limits, then its bytes."""
    refused = outcome(check_document, document)
    if refused != 0:
        return refused
    size = encoded_size(document)
    return ErrorCode.ENVELOPE_TOO_LARGE if size > max_bytes else size


documents = st.recursive(
    json_values | st.binary(max_size=3) | st.tuples(st.integers()),
    lambda inner: (
        st.lists(inner, max_size=5)
        | st.dictionaries(st.text() | st.integers() | st.none(), inner, max_size=5)
    ),
    max_leaves=60,
)


@given(documents, st.integers(min_value=0, max_value=4096))
def test_checking_the_encoding_first_refuses_and_accepts_exactly_as_checking_then_measuring(
    document: object, max_bytes: int
) -> None:
    """`check_encoded` skips the strings the encoder has proven; nothing else changes: the
    same code for every document (keys and values of any type), or the same size."""
    for container in ([document], {"k": document}):
        expected = checked_then_measured(container, max_bytes)
        assert outcome(check_encoded, container, max_bytes) == expected


@pytest.mark.parametrize(
    "document",
    [
        nested(MAX_DEPTH),
        nested(MAX_DEPTH + 1),
        nested(1000),  # past the encoder's own depth: refused by the walk, with its code
        ["x" * (MAX_ENVELOPE_BYTES + 1)],
        [0] * (MAX_ARRAY_ITEMS + 1),
        {str(i): 0 for i in range(MAX_OBJECT_KEYS + 1)},
        [MAX_SAFE_INTEGER + 1],
        {"a": [{"b": float("-inf")}]},
        {"text": "\ud800"},
        {"\udfff": 1},
        {1: "a key the encoder would write as a string"},
        [Word.A, Tree(k=Tree(v=1))],
        [Tree(v=float("nan"))],
        {"k": object()},
    ],
)
def test_each_limit_has_the_same_code_when_the_encoding_is_checked_first(document: object) -> None:
    for max_bytes in (0, 64 * 1024, MAX_ENVELOPE_BYTES):
        expected = checked_then_measured(document, max_bytes)
        assert outcome(check_encoded, document, max_bytes) == expected
