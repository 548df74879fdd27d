"""Length-prefixed JSON frames, without I/O (h11 style: feed bytes in, get frames out).

Wire format: a 4-byte big-endian unsigned length, then exactly that many bytes of one JSON
object. The object is a *frame*:

    {"k": "q"|"r"|"e"|"x", "id": int, "re": int?, "dl": float?, "ik": str?, "b": {...}}

    k   q = request, r = reply, e = event (no reply), x = error reply
    id  the sender's frame id (positive, unique per channel direction)
    re  for r/x: the id of the request being answered
    dl  for q: milliseconds the sender will wait for the reply (the receiver's deadline)
    ik  for q: idempotency key of a state-changing request
    b   the body: a message (`{"type": ..., ...}`) or, for x, `{"code", "fault", "message"}`
        (`_bodies`: the fault is the code's, so a reader that lacks it loses nothing)

There is deliberately no sender field: who sent a frame is a property of the channel it arrived
on, and a frame that tries to say otherwise is malformed (extra keys are refused).

JSON is JSON (issue 11): `NaN`, `Infinity` and a lone surrogate escape are not, whatever
Python's `json` takes; a frame holding one is malformed, and a dict body holding one is not
sent. (A number too large for a double, `1e400`, is valid JSON and reads as infinity: the
store's strict-JSON check refuses it where it would be kept.)
"""

from __future__ import annotations

import json
import re
import struct
from dataclasses import dataclass
from typing import Any, Final, Literal, cast

from pydantic_core import from_json

from .errors import ErrorCode, LocalProtocolError, RemoteProtocolError

__all__ = [
    "DEFAULT_MAX_FRAME",
    "MAX_DEADLINE_MS",
    "Frame",
    "FrameDecoder",
    "FrameFields",
    "FrameKind",
    "encode_frame",
    "parse_frame",
    "parse_frame_fields",
]

DEFAULT_MAX_FRAME: Final = 1 << 20  # 1 MiB, DESIGN §2
MAX_DEADLINE_MS: Final = 1e9 - 1  # about 11.5 days: longer waits are clamped by the sender
_HEADER: Final = struct.Struct(">I")
_KINDS: Final = frozenset("qrex")
_KEYS: Final = frozenset(("k", "id", "re", "dl", "ik", "b"))
_SURROGATE: Final = re.compile("[\ud800-\udfff]")

FrameKind = Literal["q", "r", "e", "x"]


@dataclass(frozen=True, slots=True)
class Frame:
    kind: FrameKind
    id: int
    body: dict[str, Any]
    reply_to: int | None = None
    deadline_ms: float | None = None
    idempotency_key: str | None = None

    def to_bytes(self) -> bytes:
        return _dumps(
            self.kind, self.id, self.body, self.reply_to, self.deadline_ms, self.idempotency_key
        )


def _dumps(
    kind: str,
    id: int,
    body: dict[str, Any] | str | bytes,
    reply_to: int | None,
    deadline_ms: float | None,
    idempotency_key: str | None,
) -> bytes:
    head = f'{{"k":"{kind}","id":{id}'
    if reply_to is not None:
        head += f',"re":{reply_to}'
    if deadline_ms is not None:
        head += f',"dl":{float(deadline_ms)!r}'
    if idempotency_key is not None:
        head += ',"ik":' + json.dumps(idempotency_key)
    try:
        if isinstance(body, dict):
            # ASCII escapes would carry a lone surrogate through as `\\ud800`: look first.
            if _has_lone_surrogate(body):
                raise ValueError("lone surrogate")
            body = json.dumps(body, separators=(",", ":"), allow_nan=False)
        if isinstance(body, str):
            body = body.encode()
    except ValueError as exc:  # NaN / Infinity; UnicodeEncodeError: a lone surrogate
        raise LocalProtocolError(ErrorCode.FRAME_MALFORMED, "body is not JSON") from exc
    return b"".join((head.encode(), b',"b":', body, b"}"))


def encode_frame(
    kind: FrameKind,
    id: int,
    body_json: str | bytes | dict[str, Any],
    *,
    reply_to: int | None = None,
    deadline_ms: float | None = None,
    idempotency_key: str | None = None,
    max_frame: int = DEFAULT_MAX_FRAME,
) -> bytes:
    """Length-prefixed bytes of one frame. `body_json` may be pre-serialised JSON (text or
    UTF-8 bytes, sent verbatim).

    Raises LocalProtocolError(frame_too_large) rather than send what the peer must refuse.
    """
    if deadline_ms is not None and not 0 <= deadline_ms <= MAX_DEADLINE_MS:  # also NaN, inf
        raise LocalProtocolError(ErrorCode.INTERNAL_ERROR, "deadline out of range")
    if (
        type(body_json) is bytes
        and idempotency_key is None
        and (reply_to is None or deadline_ms is None)
    ):
        # The bus's shapes: `_dumps`'s bytes, built without copying the body twice.
        if reply_to is not None:
            head = f'{{"k":"{kind}","id":{id},"re":{reply_to},"b":'.encode()
        elif deadline_ms is not None:
            head = f'{{"k":"{kind}","id":{id},"dl":{float(deadline_ms)!r},"b":'.encode()
        else:
            head = f'{{"k":"{kind}","id":{id},"b":'.encode()
        size = len(head) + len(body_json) + 1
        if size > max_frame:
            raise LocalProtocolError(
                ErrorCode.FRAME_TOO_LARGE, f"frame of {size} bytes exceeds {max_frame}"
            )
        return b"".join((_HEADER.pack(size), head, body_json, b"}"))
    payload = _dumps(kind, id, body_json, reply_to, deadline_ms, idempotency_key)
    if len(payload) > max_frame:
        raise LocalProtocolError(
            ErrorCode.FRAME_TOO_LARGE, f"frame of {len(payload)} bytes exceeds {max_frame}"
        )
    return _HEADER.pack(len(payload)) + payload


def _malformed(why: str) -> RemoteProtocolError:
    return RemoteProtocolError(ErrorCode.FRAME_MALFORMED, why)


def _loads(payload: bytes) -> Any:
    """The JSON value of `payload`, as `json.loads` reads strict JSON: no NaN, no Infinity, no
    lone surrogate (each is `frame_malformed`).

    pydantic-core's parser is several times faster than the stdlib's on a frame, and refuses
    those three itself (`allow_inf_nan=False`; a lone surrogate escape always), but it also
    refuses nesting past 200 levels, which is JSON: whatever it refuses is read again by the
    stdlib, held to the same rules, so what is accepted, and how, does not depend on the parser.
    """
    try:
        return from_json(payload, allow_inf_nan=False)
    except ValueError:
        return _loads_stdlib(payload)


def _not_json(name: str) -> Any:
    raise ValueError(name)  # NaN, Infinity, -Infinity


def _has_lone_surrogate(value: Any) -> bool:
    """Whether a string anywhere in `value` holds a surrogate code point (the UTF-8 text of a
    frame cannot: only a `\\u` escape puts one there, and a valid pair decodes to one code
    point). Iterative: the value may nest as deep as the stdlib parser went."""
    stack = [value]
    while stack:
        item = stack.pop()
        if type(item) is str:
            if not item.isascii() and _SURROGATE.search(item):
                return True
        elif type(item) is dict:
            stack.extend(item.keys())
            stack.extend(item.values())
        elif type(item) is list:
            stack.extend(item)
    return False


def _loads_stdlib(payload: bytes) -> Any:
    try:
        # str: skips json's encoding sniffing
        value = json.loads(payload.decode(), parse_constant=_not_json)
    except (ValueError, RecursionError) as exc:  # UnicodeDecodeError is a ValueError
        raise _malformed("not JSON") from exc
    if _has_lone_surrogate(value):
        raise _malformed("not JSON")
    return value


def parse_frame(payload: bytes) -> Frame:
    """Validate one frame payload. Raises RemoteProtocolError(frame_malformed)."""
    return Frame(*parse_frame_fields(payload))


FrameFields = tuple[FrameKind, int, dict[str, Any], int | None, float | None, str | None]


def parse_frame_fields(payload: bytes) -> FrameFields:
    """`parse_frame` as a plain tuple (the bus's hot path: no object to build)."""
    try:
        obj = from_json(payload, allow_inf_nan=False)  # `_loads`, inline
    except ValueError:
        obj = _loads_stdlib(payload)
    if type(obj) is not dict:
        raise _malformed("not a frame object")
    kind = obj.get("k")
    fid = obj.get("id")
    body = obj.get("b")
    if (
        type(kind) is not str
        or kind not in _KINDS
        or type(fid) is not int
        or fid <= 0
        or type(body) is not dict
    ):
        raise _malformed("bad kind, id or body")
    # The shapes the bus sends, checked in full without the general rules below (their keys
    # are all known: k, id and b, and at most the one more that was just checked).
    size = len(obj)
    if kind in ("r", "x"):
        if size == 4:  # k, id, b and one more known key, which must be a good `re`
            reply_to = obj.get("re")
            if type(reply_to) is int and reply_to > 0:
                return cast(FrameKind, kind), fid, body, reply_to, None, None
    elif size == 3:  # a request or event with nothing else
        return cast(FrameKind, kind), fid, body, None, None, None
    elif size == 4 and kind == "q":  # a request with a deadline
        deadline = obj.get("dl")
        if type(deadline) is float and 0 <= deadline <= MAX_DEADLINE_MS:
            return "q", fid, body, None, deadline, None
    if not obj.keys() <= _KEYS:
        raise _malformed("unknown keys")
    reply_to = obj.get("re")
    deadline = obj.get("dl")
    ikey = obj.get("ik")
    if kind in ("r", "x"):
        if type(reply_to) is not int or reply_to <= 0 or deadline is not None or ikey is not None:
            raise _malformed("a reply needs `re` and nothing else")
    elif reply_to is not None:
        raise _malformed("only replies carry `re`")
    if deadline is not None and (
        kind != "q" or type(deadline) not in (int, float) or not 0 <= deadline <= MAX_DEADLINE_MS
    ):
        raise _malformed("bad deadline")
    if ikey is not None and (kind != "q" or type(ikey) is not str or len(ikey) > 200):
        raise _malformed("bad idempotency key")
    return (
        cast(FrameKind, kind),
        fid,
        body,
        reply_to,
        float(deadline) if deadline is not None else None,
        ikey,
    )


class FrameDecoder:
    """Accumulates bytes; yields whole frame payloads. Never blocks, never grows past the limit.

    After an error the decoder is poisoned: the channel must be closed (a peer that sent one bad
    length prefix has lost framing for good).
    """

    __slots__ = ("_broken", "_buf", "max_frame")

    def __init__(self, max_frame: int = DEFAULT_MAX_FRAME) -> None:
        self.max_frame = max_frame
        self._buf = bytearray()
        self._broken = False

    @property
    def pending_bytes(self) -> int:
        return len(self._buf)

    def feed(self, data: bytes) -> list[bytes]:
        if self._broken:
            raise RemoteProtocolError(ErrorCode.FRAME_MALFORMED, "decoder already failed")
        buf = self._buf
        if not buf and len(data) >= 4:
            # The common case: a read that is exactly one whole frame, sliced without buffering.
            (length,) = _HEADER.unpack_from(data)
            if length + 4 == len(data) and length <= self.max_frame:
                return [data[4:]]
        buf += data
        frames: list[bytes] = []
        pos = 0
        while len(buf) - pos >= 4:
            (length,) = _HEADER.unpack_from(buf, pos)
            if length > self.max_frame:
                self._broken = True
                raise RemoteProtocolError(
                    ErrorCode.FRAME_TOO_LARGE, f"frame of {length} bytes exceeds {self.max_frame}"
                )
            if len(buf) - pos - 4 < length:
                break
            frames.append(bytes(buf[pos + 4 : pos + 4 + length]))
            pos += 4 + length
        if pos:
            del buf[:pos]
        return frames
