"""A sync page: one poison envelope costs itself; the rest of the page and the cursor stand."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lineup.actors.kernel import ErrorCode
from lineup.wire import MAX_ENVELOPE_BYTES, Admitted, PageMalformed, Refusal, decode_sync_page


def good(n: int) -> dict[str, object]:
    return {"v": 1, "id": f"m{n}", "type": "lineup.v1.text", "payload": {"markdown": f"hi {n}"}}


def page(*raw: str, cursor: str = "42") -> bytes:
    return ('{"messages": [' + ", ".join(raw) + '], "cursor": ' + json.dumps(cursor) + "}").encode()


def deep(levels: int) -> str:
    return '{"v": 1, "id": "poison", "payload": ' + "[" * levels + "]" * levels + "}"


@pytest.mark.parametrize("levels", [40, 5_000, 100_000])
def test_a_deep_envelope_is_refused_and_its_neighbours_and_the_cursor_survive(levels: int) -> None:
    body = page(json.dumps(good(1)), deep(levels), json.dumps(good(2)), cursor="c-7")
    result = decode_sync_page(body)
    assert result.cursor == "c-7"
    first, poison, last = result.items
    assert isinstance(first, Admitted)
    assert first.document == good(1)
    assert isinstance(poison, Refusal)
    assert poison.code is ErrorCode.ENVELOPE_TOO_DEEP
    assert isinstance(last, Admitted)
    assert last.document == good(2)


def test_an_integer_too_long_to_parse_costs_only_its_envelope() -> None:
    body = page(json.dumps(good(1)), '{"id": "big", "n": ' + "9" * 6000 + "}")
    result = decode_sync_page(body)
    assert isinstance(result.items[0], Admitted)
    assert isinstance(result.items[1], Refusal)
    assert result.items[1].code is ErrorCode.ENVELOPE_MALFORMED


def test_strings_holding_brackets_and_escaped_quotes_do_not_confuse_the_scan() -> None:
    tricky = {"v": 1, "id": "t", "payload": {"markdown": 'a ] } , "\\" [ {'}}
    body = page(json.dumps(tricky), deep(100_000))
    result = decode_sync_page(body)
    assert isinstance(result.items[0], Admitted)
    assert result.items[0].document == tricky
    assert isinstance(result.items[1], Refusal)


def test_an_envelope_over_the_size_limit_is_refused_too_large_with_its_id() -> None:
    huge = {"v": 1, "id": "huge", "payload": {"markdown": "x" * (MAX_ENVELOPE_BYTES - 10)}}
    result = decode_sync_page(page(json.dumps(huge)))
    (item,) = result.items
    assert isinstance(item, Refusal)
    assert (item.code, item.message_id) == (ErrorCode.ENVELOPE_TOO_LARGE, "huge")


def test_an_envelope_that_is_not_an_object_is_refused_malformed() -> None:
    (item,) = decode_sync_page(page("[1, 2]")).items
    assert isinstance(item, Refusal)
    assert item.code is ErrorCode.ENVELOPE_MALFORMED


@pytest.mark.parametrize(
    "body",
    [
        b"<!doctype html><title>Sign in to the Wi-Fi</title>",
        b"[]",
        b'{"messages": {}}',
        b'{"messages": [], "cursor": 7}',
        b'{"messages": []}',
        b'{"messages": [' + b"[" * 100_000,  # unbalanced and deep
        b'{"messages": [' + b"[" * 100_000 + b"]" * 100_000 + b"]}",  # deep, but no cursor
    ],
)
def test_a_body_that_is_not_a_sync_page_is_malformed_as_a_whole(body: bytes) -> None:
    with pytest.raises(PageMalformed):
        decode_sync_page(body)


@given(st.binary(max_size=400))
def test_any_bytes_are_a_page_or_malformed_never_another_exception(body: bytes) -> None:
    try:
        decode_sync_page(body)
    except PageMalformed:
        pass


@pytest.mark.parametrize(
    "poison",
    [
        '{"v": 1, "id": "poison", "payload": {"n": NaN}}',
        '{"v": 1, "id": "poison", "payload": {"n": [Infinity]}}',
        '{"v": 1, "id": "poison", "payload": {"n": -Infinity}}',
        '{"v": 1, "id": "poison", "payload": {"markdown": "\\ud800"}}',
        '{"v": 1, "id": "poison", "payload": {"\\udfff": 1}}',
    ],
    ids=["nan", "infinity", "minus-infinity", "lone-surrogate", "surrogate-key"],
)
@pytest.mark.parametrize("deep_neighbour", [False, True], ids=["fast-path", "scan-path"])
def test_json_that_is_not_json_costs_only_its_envelope_on_either_path(
    poison: str, deep_neighbour: bool
) -> None:
    # A neighbour too deep for the stdlib parser sends the whole page down the slow scan.
    extra = (deep(100_000),) if deep_neighbour else ()
    body = page(json.dumps(good(1)), poison, *extra, json.dumps(good(2)), cursor="c-9")
    result = decode_sync_page(body)
    assert result.cursor == "c-9"
    first, refused, *_, last = result.items
    assert isinstance(first, Admitted) and isinstance(last, Admitted)
    assert isinstance(refused, Refusal)
    assert refused.code is ErrorCode.ENVELOPE_MALFORMED
