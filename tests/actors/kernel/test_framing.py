"""Frame encoding and decoding (actors/kernel/framing.py), sans I/O.

The properties state what must hold for every input: valid frames survive any chunking and
round-trip every field; any byte stream at all yields payloads or `RemoteProtocolError`, nothing
else; oversize frames are refused from their length prefix alone.
"""

from __future__ import annotations

import json
import math
import struct
from itertools import pairwise
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from lineup.actors.kernel import (
    DEFAULT_MAX_FRAME,
    ErrorCode,
    Frame,
    FrameDecoder,
    LocalProtocolError,
    RemoteProtocolError,
    encode_frame,
    framing,
    parse_frame,
)
from lineup.actors.kernel.framing import MAX_DEADLINE_MS, FrameKind

HEADER = struct.Struct(">I")

# ------------------------------------------------------------------------------- strategies

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**63), max_value=2**63)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=20)
)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)
bodies = st.dictionaries(st.text(max_size=12), json_values, max_size=5)
frame_ids = st.integers(min_value=1, max_value=2**63)


@st.composite
def valid_frames(draw: st.DrawFn) -> Frame:
    kind: FrameKind = draw(st.sampled_from(["q", "r", "e", "x"]))
    reply_to = draw(frame_ids) if kind in ("r", "x") else None
    deadline = idem = None
    if kind == "q":
        deadline = draw(st.none() | st.floats(min_value=0, max_value=MAX_DEADLINE_MS))
        idem = draw(st.none() | st.text(max_size=200))
    return Frame(kind, draw(frame_ids), draw(bodies), reply_to, deadline, idem)


def encode(frame: Frame, max_frame: int = DEFAULT_MAX_FRAME) -> bytes:
    return encode_frame(
        frame.kind,
        frame.id,
        frame.body,
        reply_to=frame.reply_to,
        deadline_ms=frame.deadline_ms,
        idempotency_key=frame.idempotency_key,
        max_frame=max_frame,
    )


def chunked(data: bytes, draw: st.DataObject) -> list[bytes]:
    """`data` cut at arbitrary points (including empty chunks)."""
    cuts = sorted(draw.draw(st.lists(st.integers(0, len(data)), max_size=12), label="cuts"))
    bounds = [0, *cuts, len(data)]
    return [data[a:b] for a, b in pairwise(bounds)]


def framed(payload: bytes) -> bytes:
    return HEADER.pack(len(payload)) + payload


# Raw JSON objects shaped like frames: frame keys, smuggled keys, and plausible or absurd values.
frame_like_values = (
    st.sampled_from(["q", "r", "e", "x", "z", ""])
    | st.integers(min_value=-3, max_value=3)
    | st.integers()
    | st.floats()
    | st.booleans()
    | st.none()
    | st.text(max_size=210)
    | bodies
    | st.lists(json_scalars, max_size=3)
)
frame_like_objects = st.dictionaries(
    st.sampled_from(["k", "id", "re", "dl", "ik", "b", "sender", "from"]),
    frame_like_values,
    max_size=8,
)
frame_like_payloads = frame_like_objects.map(lambda obj: json.dumps(obj).encode())


def assert_frame_or_malformed(payload: bytes) -> Frame | None:
    """parse_frame's whole contract: a sane Frame, or RemoteProtocolError(frame_malformed)."""
    try:
        frame = parse_frame(payload)
    except RemoteProtocolError as exc:
        refusal = exc
    else:
        return check_frame(frame)
    assert refusal.code is ErrorCode.FRAME_MALFORMED
    return None


def check_frame(frame: Frame) -> Frame:
    assert frame.kind in ("q", "r", "e", "x")
    assert type(frame.id) is int
    assert frame.id > 0
    assert isinstance(frame.body, dict)
    assert (frame.reply_to is not None) == (frame.kind in ("r", "x"))
    if frame.kind in ("r", "x"):
        assert frame.deadline_ms is None
    if frame.deadline_ms is not None:
        assert math.isfinite(frame.deadline_ms)
        assert 0 <= frame.deadline_ms <= MAX_DEADLINE_MS
    if frame.idempotency_key is not None:
        assert frame.kind == "q"
        assert len(frame.idempotency_key) <= 200
    return frame


# ------------------------------------------------------------------------ (a) valid frames


@settings(deadline=None)
@given(frames=st.lists(valid_frames(), max_size=6), data=st.data())
def test_valid_frames_come_back_whole_from_any_chunking(
    frames: list[Frame], data: st.DataObject
) -> None:
    wire = [encode(frame) for frame in frames]
    decoder = FrameDecoder()
    payloads: list[bytes] = []
    for chunk in chunked(b"".join(wire), data):
        payloads.extend(decoder.feed(chunk))
    assert payloads == [raw[4:] for raw in wire]
    assert decoder.pending_bytes == 0
    assert [parse_frame(payload) for payload in payloads] == frames


@settings(deadline=None)
@given(frame=valid_frames())
def test_parse_frame_round_trips_every_field(frame: Frame) -> None:
    raw = encode(frame)
    assert HEADER.unpack_from(raw)[0] == len(raw) - 4
    assert parse_frame(raw[4:]) == frame
    assert parse_frame(frame.to_bytes()) == frame


@settings(deadline=None)
@given(frame=valid_frames())
def test_a_frame_of_exactly_the_limit_is_accepted(frame: Frame) -> None:
    raw = encode(frame)
    limit = len(raw) - 4
    assert FrameDecoder(limit).feed(encode(frame, max_frame=limit)) == [raw[4:]]


def test_pre_serialised_body_json_is_sent_verbatim() -> None:
    raw = encode_frame("e", 7, '{"type":"x.y.z","n":1}')
    assert parse_frame(raw[4:]) == Frame("e", 7, {"type": "x.y.z", "n": 1})


# ------------------------------------------------------------------- (b) any byte stream

junk_streams = st.lists(
    st.binary(max_size=40)
    | st.binary(max_size=40).map(framed)
    | frame_like_payloads.map(framed)
    | valid_frames().map(encode),
    max_size=8,
).map(b"".join)


@settings(deadline=None, max_examples=300)
@given(
    stream=junk_streams | st.binary(max_size=300),
    data=st.data(),
    max_frame=st.integers(min_value=0, max_value=400) | st.just(DEFAULT_MAX_FRAME),
)
def test_any_byte_stream_gives_payloads_or_remote_protocol_error(
    stream: bytes, data: st.DataObject, max_frame: int
) -> None:
    decoder = FrameDecoder(max_frame)
    fed = emitted = 0
    for chunk in chunked(stream, data):
        try:
            payloads = decoder.feed(chunk)
        except RemoteProtocolError as exc:
            failure = exc
            break
        fed += len(chunk)
        for payload in payloads:
            assert len(payload) <= max_frame
            emitted += 4 + len(payload)
            assert_frame_or_malformed(payload)
        # Nothing is lost or invented, and the buffer never outgrows one frame.
        assert emitted + decoder.pending_bytes == fed
        assert decoder.pending_bytes < 4 + max_frame
    else:
        return
    assert failure.code in (ErrorCode.FRAME_TOO_LARGE, ErrorCode.FRAME_MALFORMED)
    with pytest.raises(RemoteProtocolError):  # and it stays failed
        decoder.feed(b"")


@settings(deadline=None, max_examples=500)
@given(payload=frame_like_payloads | st.binary(max_size=200))
@example(payload=b'{"k": {}, "id": 1, "b": {}}')  # an unhashable kind: must not escape as TypeError
def test_parse_frame_gives_a_valid_frame_or_frame_malformed(payload: bytes) -> None:
    assert_frame_or_malformed(payload)


@pytest.mark.parametrize(
    "payload",
    [
        b"",
        b"\xff\xfe\x00garbage",
        b"[" * 100_000,  # nesting deep enough to exhaust the recursion limit
        b'{"k":"q","id":' + b"9" * 5000 + b',"b":{}}',  # beyond int-parsing digit limit
        b'"just a string"',
        b"[1, 2, 3]",
        b"null",
        b'{"k":"q","id":1,"b":{}',
    ],
    ids=["empty", "not-utf8", "deep-nesting", "huge-int", "string", "array", "null", "truncated"],
)
def test_non_frame_payloads_are_frame_malformed(payload: bytes) -> None:
    with pytest.raises(RemoteProtocolError) as info:
        parse_frame(payload)
    assert info.value.code is ErrorCode.FRAME_MALFORMED


LONE_SURROGATE = b'{"k":"e","id":1,"b":{"t":"\\ud800"}}'
DEEP = b'{"k":"e","id":1,"b":{"d":' + b"[" * 300 + b"]" * 300 + b"}}"


def _refuse(name: str) -> object:
    raise ValueError(name)


def stdlib_reading(payload: bytes) -> str:
    """What `json.loads` makes of `payload` held to strict JSON (no NaN, no Infinity, no lone
    surrogate), as a repr (-0.0 compares by spelling)."""
    try:
        value = json.loads(payload.decode(), parse_constant=_refuse)
        # A lone surrogate cannot be re-encoded as UTF-8; a valid pair can.
        json.dumps(value, ensure_ascii=False).encode()
        return repr(value)
    except (ValueError, RecursionError):
        return "refused: frame_malformed"


@settings(deadline=None, max_examples=500)
@given(payload=frame_like_payloads | st.binary(max_size=200) | valid_frames().map(encode))
@example(payload=LONE_SURROGATE)  # refused by both parsers
@example(payload=DEEP)  # past pydantic-core's nesting limit, within the stdlib's
@example(payload=b'{"k":"e","id":1,"b":{"a":1,"a":2}}')  # a repeated key: the last one counts
@example(payload=b'{"k":"e","id":1,"b":{"n":NaN,"i":-Infinity,"z":-0.0,"x":1e400}}')
@example(payload=b'{"k":"e","id":1,"b":{"z":-0.0,"x":1e400,"p":"\\ud83d\\ude00"}}')
@example(payload=b'{"k":"e","id":1,"b":{"d":' + b"[" * 300 + b"NaN" + b"]" * 300 + b"}}")
@example(payload=b'{"k":"e","id":' + b"9" * 40 + b',"b":{}}')
def test_a_frame_is_read_exactly_as_the_stdlib_json_reads_it(payload: bytes) -> None:
    raw = payload[4:] if payload[:1] == b"\x00" else payload  # valid_frames() carry a header
    try:
        got = repr(framing._loads(raw))
    except RemoteProtocolError as exc:
        got = f"refused: {exc.code.value}"
    assert got == stdlib_reading(raw)


def test_json_the_fast_parser_refuses_but_the_stdlib_takes_is_still_a_frame() -> None:
    assert parse_frame(DEEP).body == json.loads(DEEP)["b"]


DEEP_SURROGATE = b'{"k":"e","id":1,"b":{"d":' + b"[" * 300 + b'"\\udc00"' + b"]" * 300 + b"}}"


@pytest.mark.parametrize(
    "payload",
    [
        b'{"k":"e","id":1,"b":{"n":NaN}}',
        b'{"k":"e","id":1,"b":{"n":Infinity}}',
        b'{"k":"q","id":1,"b":{"n":[-Infinity]}}',
        b'{"k":"e","id":1,"b":{"type":"x","data":{"v":NaN}}}',
        LONE_SURROGATE,
        b'{"k":"e","id":1,"b":{"\\udfff":1}}',
        b'{"k":"e","id":1,"b":{"d":' + b"[" * 300 + b"NaN" + b"]" * 300 + b"}}",
        DEEP_SURROGATE,
    ],
    ids=["nan", "infinity", "minus-infinity", "nested-nan", "lone-surrogate", "surrogate-key",
         "deep-nan", "deep-surrogate"],
)  # fmt: skip
def test_nan_infinity_and_lone_surrogates_are_frame_malformed(payload: bytes) -> None:
    with pytest.raises(RemoteProtocolError) as info:
        parse_frame(payload)
    assert info.value.code is ErrorCode.FRAME_MALFORMED


@pytest.mark.parametrize(
    "body", [{"n": math.nan}, {"n": [math.inf]}, {"t": "\ud800"}, {"\udc00": 1}],
    ids=["nan", "infinity", "lone-surrogate", "surrogate-key"],
)  # fmt: skip
def test_a_body_that_is_not_json_is_never_encoded(body: dict[str, object]) -> None:
    with pytest.raises(LocalProtocolError) as info:
        encode_frame("e", 1, body)
    assert info.value.code is ErrorCode.FRAME_MALFORMED


def test_a_valid_surrogate_pair_is_one_character() -> None:
    assert parse_frame(b'{"k":"e","id":1,"b":{"t":"\\ud83d\\ude00"}}').body == {"t": "\U0001f600"}


@settings(deadline=None)
@given(frame=valid_frames())
def test_a_pre_serialised_body_gives_the_same_bytes_as_the_body_itself(frame: Frame) -> None:
    body = json.dumps(frame.body, separators=(",", ":"))
    as_dict = encode(frame)
    for pre_serialised in (body, body.encode()):
        assert as_dict == encode_frame(
            frame.kind,
            frame.id,
            pre_serialised,
            reply_to=frame.reply_to,
            deadline_ms=frame.deadline_ms,
            idempotency_key=frame.idempotency_key,
        )


# ---------------------------------------------------------------------- (c) oversize frames


@given(
    max_frame=st.integers(min_value=0, max_value=DEFAULT_MAX_FRAME),
    excess=st.integers(min_value=1, max_value=2**32 - 1 - DEFAULT_MAX_FRAME),
)
def test_an_oversize_length_prefix_fails_before_its_body_arrives(
    max_frame: int, excess: int
) -> None:
    decoder = FrameDecoder(max_frame)
    header = HEADER.pack(max_frame + excess)
    assert decoder.feed(header[:3]) == []  # not yet a whole prefix: nothing to judge
    with pytest.raises(RemoteProtocolError) as info:
        decoder.feed(header[3:])
    assert info.value.code is ErrorCode.FRAME_TOO_LARGE


def test_an_oversize_frame_after_good_ones_in_the_same_chunk_fails_at_once() -> None:
    good = encode_frame("e", 1, {"type": "a.b.c"})
    decoder = FrameDecoder(len(good))
    with pytest.raises(RemoteProtocolError) as info:
        decoder.feed(good + HEADER.pack(len(good) + 1))
    assert info.value.code is ErrorCode.FRAME_TOO_LARGE


def test_a_failed_decoder_stays_failed_even_for_valid_frames() -> None:
    decoder = FrameDecoder(16)
    with pytest.raises(RemoteProtocolError):
        decoder.feed(HEADER.pack(17))
    good = encode_frame("e", 1, {})
    for _ in range(3):
        with pytest.raises(RemoteProtocolError):
            decoder.feed(good)


def test_the_default_limit_is_one_mebibyte() -> None:
    decoder = FrameDecoder()
    assert decoder.feed(HEADER.pack(DEFAULT_MAX_FRAME)) == []
    with pytest.raises(RemoteProtocolError) as info:
        FrameDecoder().feed(HEADER.pack(DEFAULT_MAX_FRAME + 1))
    assert info.value.code is ErrorCode.FRAME_TOO_LARGE


# -------------------------------------------------------------------- (d) malformed frames

BODY: dict[str, Any] = {"type": "router.sdk.kerneltest_echo", "text": "hi"}

MALFORMED: dict[str, dict[str, Any]] = {
    # Who sent a frame is the channel's business; a frame claiming a sender is refused.
    "claims-sender": {"k": "q", "id": 1, "b": BODY, "sender": "store"},
    "claims-from": {"k": "e", "id": 1, "b": BODY, "from": "supervisor"},
    "claims-identity-on-reply": {"k": "r", "id": 1, "re": 1, "b": BODY, "identity": "router"},
    "reply-without-re": {"k": "r", "id": 1, "b": BODY},
    "error-without-re": {"k": "x", "id": 1, "b": {"code": "internal_error"}},
    "reply-with-null-re": {"k": "r", "id": 1, "re": None, "b": BODY},
    "reply-with-string-re": {"k": "r", "id": 1, "re": "1", "b": BODY},
    "request-with-re": {"k": "q", "id": 2, "re": 1, "b": BODY},
    "event-with-re": {"k": "e", "id": 2, "re": 1, "b": BODY},
    "id-zero": {"k": "q", "id": 0, "b": BODY},
    "id-negative": {"k": "e", "id": -1, "b": BODY},
    "id-bool": {"k": "q", "id": True, "b": BODY},
    "id-float": {"k": "q", "id": 1.0, "b": BODY},
    "id-string": {"k": "q", "id": "1", "b": BODY},
    "id-missing": {"k": "q", "b": BODY},
    "re-zero": {"k": "r", "id": 1, "re": 0, "b": BODY},
    "re-negative": {"k": "x", "id": 1, "re": -5, "b": {"code": "internal_error"}},
    "deadline-negative": {"k": "q", "id": 1, "dl": -1, "b": BODY},
    "deadline-too-far": {"k": "q", "id": 1, "dl": 1e9, "b": BODY},
    "deadline-string": {"k": "q", "id": 1, "dl": "100", "b": BODY},
    "deadline-bool": {"k": "q", "id": 1, "dl": True, "b": BODY},
    "deadline-nan": {"k": "q", "id": 1, "dl": math.nan, "b": BODY},
    "deadline-infinite": {"k": "q", "id": 1, "dl": math.inf, "b": BODY},
    "deadline-on-reply": {"k": "r", "id": 2, "re": 1, "dl": 10, "b": BODY},
    "deadline-on-event": {"k": "e", "id": 1, "dl": 10, "b": BODY},
    "idempotency-key-on-event": {"k": "e", "id": 1, "ik": "abc", "b": BODY},
    "idempotency-key-on-reply": {"k": "r", "id": 2, "re": 1, "ik": "abc", "b": BODY},
    "idempotency-key-too-long": {"k": "q", "id": 1, "ik": "k" * 201, "b": BODY},
    "idempotency-key-not-string": {"k": "q", "id": 1, "ik": 7, "b": BODY},
    "unknown-kind": {"k": "z", "id": 1, "b": BODY},
    "kind-object": {"k": {}, "id": 1, "b": BODY},
    "kind-list": {"k": ["q"], "id": 1, "b": BODY},
    "kind-missing": {"id": 1, "b": BODY},
    "body-missing": {"k": "q", "id": 1},
    "body-list": {"k": "q", "id": 1, "b": [BODY]},
    "body-string": {"k": "q", "id": 1, "b": json.dumps(BODY)},
    "body-null": {"k": "e", "id": 1, "b": None},
}


@pytest.mark.parametrize("obj", list(MALFORMED.values()), ids=list(MALFORMED))
def test_frames_breaking_the_envelope_rules_are_frame_malformed(obj: dict[str, Any]) -> None:
    with pytest.raises(RemoteProtocolError) as info:
        parse_frame(json.dumps(obj).encode())
    assert info.value.code is ErrorCode.FRAME_MALFORMED


def test_a_request_may_carry_a_deadline_and_an_idempotency_key() -> None:
    frame = parse_frame(
        json.dumps({"k": "q", "id": 3, "dl": 250, "ik": "k" * 200, "b": BODY}).encode()
    )
    assert frame == Frame("q", 3, BODY, None, 250.0, "k" * 200)
    assert type(frame.deadline_ms) is float


# ------------------------------------------------------------------------ (e) encoding side


@given(body=bodies, max_frame=st.integers(min_value=0, max_value=4096))
def test_encode_frame_refuses_what_the_peer_would_refuse_as_too_large(
    body: dict[str, Any], max_frame: int
) -> None:
    size = len(encode_frame("e", 1, body)) - 4
    if size > max_frame:
        with pytest.raises(LocalProtocolError) as info:
            encode_frame("e", 1, body, max_frame=max_frame)
        assert info.value.code is ErrorCode.FRAME_TOO_LARGE
    else:
        raw = encode_frame("e", 1, body, max_frame=max_frame)
        assert FrameDecoder(max_frame).feed(raw) == [raw[4:]]


def test_encode_frame_refuses_one_byte_over_the_default_limit() -> None:
    overhead = len(encode_frame("e", 1, {"p": ""})) - 4
    fits = {"p": "x" * (DEFAULT_MAX_FRAME - overhead)}
    assert len(encode_frame("e", 1, fits)) == 4 + DEFAULT_MAX_FRAME
    with pytest.raises(LocalProtocolError) as info:
        encode_frame("e", 1, {"p": "x" * (DEFAULT_MAX_FRAME - overhead + 1)})
    assert info.value.code is ErrorCode.FRAME_TOO_LARGE
