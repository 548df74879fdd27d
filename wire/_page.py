"""A sync page, taken apart one envelope at a time, so that one poison envelope costs itself.

Theory of operation
-------------------
`GET /v1/sync` answers `{"messages": [envelope…], "cursor": "C2"}`. The page is parsed whole
when it can be; each envelope is then checked against the limits on its own, and one that
breaks them becomes a `Refusal` in its place: the rest of the page, and the cursor, still
stand. When the page cannot be parsed whole (one envelope nested deeper than the parser can
recurse, an integer too long to convert), a linear scan that knows only strings and brackets
finds each envelope's byte span, and each span is parsed on its own. A page whose *shape* is
wrong (not that object, no cursor) is a protocol error of the AppServer: `PageMalformed`.

The limits are checked here only (`check_envelope`): what is `Admitted` is safe to hand on, and
is parsed as an Agent envelope once (`agent_envelope`), by whoever hands it on.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Final

from lineup.actors.kernel.errors import ErrorCode, LineUpError

from ._limits import (
    MAX_ENVELOPE_BYTES,
    WireLimitError,
    check_document,
    decode_json,
    encoded_size,
)

__all__ = [
    "MAX_CURSOR_CHARS",
    "Admitted",
    "PageMalformed",
    "Refusal",
    "SyncPage",
    "check_envelope",
    "decode_sync_page",
    "message_id_of",
    "message_type_of",
]

MAX_CURSOR_CHARS: Final = 200
_TOKEN: Final = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{},:]', re.DOTALL)


class PageMalformed(LineUpError):
    """The answer is not a sync page at all (the AppServer's fault, not one envelope's)."""

    default_code = ErrorCode.ENVELOPE_MALFORMED


@dataclass(frozen=True, slots=True)
class Refusal:
    """An envelope of the page refused before anything else saw it."""

    index: int
    code: ErrorCode
    message_id: str | None


@dataclass(frozen=True, slots=True)
class Admitted:
    """An envelope within every limit, with its encoded size (for batching)."""

    index: int
    document: dict[str, Any]
    size: int


@dataclass(frozen=True, slots=True)
class SyncPage:
    items: tuple[Admitted | Refusal, ...]
    cursor: str


def message_id_of(document: object) -> str | None:
    """The `id` of a document that may be anything, if it is a sane id (for refusals)."""
    if isinstance(document, dict):
        candidate = document.get("id")
        if isinstance(candidate, str) and 0 < len(candidate) <= 200 and candidate.isprintable():
            return candidate
    return None


def message_type_of(document: object) -> str | None:
    """The `type` of a document that may be anything, cut to 100 characters (for refusals)."""
    if isinstance(document, dict):
        value = document.get("type")
        if isinstance(value, str):
            return value[:100]
    return None


def check_envelope(document: object) -> int:
    """Check one envelope of a page against the wire's limits (depth, lengths, numbers), that
    it is an object, and its size; returns the size (compact UTF-8 JSON bytes). Raises
    `WireLimitError`: `envelope_too_deep`, `envelope_too_large`, `envelope_malformed`."""
    check_document(document)
    return _object_size(document)


def _object_size(document: object) -> int:
    """`check_envelope` for a document whose limits are checked already."""
    if not isinstance(document, dict):
        raise WireLimitError(ErrorCode.ENVELOPE_MALFORMED, "not an object")
    size = encoded_size(document)
    if size > MAX_ENVELOPE_BYTES:
        raise WireLimitError(ErrorCode.ENVELOPE_TOO_LARGE, "bytes")
    return size


def _item(index: int, document: object, *, checked: bool = False) -> Admitted | Refusal:
    """One envelope of the page, admitted or refused. `checked`: its limits were checked as
    it was parsed (`decode_json`), so they are not walked again."""
    try:
        size = _object_size(document) if checked else check_envelope(document)
    except WireLimitError as exc:
        return Refusal(index, exc.code, message_id_of(document))
    assert isinstance(document, dict)  # refused above otherwise
    return Admitted(index, document, size)


def _cursor(value: object) -> str:
    if not isinstance(value, str) or len(value) > MAX_CURSOR_CHARS or not value.isprintable():
        raise PageMalformed(ErrorCode.ENVELOPE_MALFORMED, "cursor")
    return value


def decode_sync_page(body: bytes) -> SyncPage:
    """Split one sync answer into admitted envelopes and refusals. Raises `PageMalformed`."""
    try:
        page = json.loads(body)
    except (RecursionError, ValueError, UnicodeDecodeError):
        return _scan(body)
    if not isinstance(page, dict) or not isinstance(page.get("messages"), list):
        raise PageMalformed(ErrorCode.ENVELOPE_MALFORMED, "shape")
    cursor = _cursor(page.get("cursor"))
    return SyncPage(tuple(_item(i, m) for i, m in enumerate(page["messages"])), cursor)


def _scan(body: bytes) -> SyncPage:
    """The slow path: find each envelope's span by strings and brackets alone."""
    depth = 0
    key: bytes | None = None  # the top-level key whose value comes next
    last_string: bytes | None = None
    cursor: str | None = None
    in_messages = False
    start = 0
    spans: list[tuple[int, int]] = []
    for match in _TOKEN.finditer(body):
        token = match.group()
        if token[:1] == b'"':
            if depth == 1 and key == b'"cursor"':
                try:
                    cursor = _cursor(json.loads(token))
                except ValueError as exc:
                    raise PageMalformed(ErrorCode.ENVELOPE_MALFORMED, "cursor") from exc
                key = None
            last_string = token
        elif token == b":":
            if depth == 1:
                key = last_string
        elif token in (b"[", b"{"):
            depth += 1
            if depth == 2 and token == b"[" and key == b'"messages"':
                in_messages, start = True, match.end()
        elif token in (b"]", b"}"):
            if in_messages and depth == 2:
                if body[start : match.start()].strip():
                    spans.append((start, match.start()))
                in_messages = False
            depth -= 1
            if depth == 1:
                key = None
        elif token == b",":
            if in_messages and depth == 2:
                spans.append((start, match.start()))
                start = match.end()
            elif depth == 1:
                key = None
    if depth != 0 or cursor is None or body.lstrip()[:1] != b"{":
        raise PageMalformed(ErrorCode.ENVELOPE_MALFORMED, "shape")
    items: list[Admitted | Refusal] = []
    for index, (begin, end) in enumerate(spans):
        try:
            document = decode_json(body[begin:end], max_bytes=MAX_ENVELOPE_BYTES)
        except WireLimitError as exc:
            items.append(Refusal(index, exc.code, None))
            continue
        items.append(_item(index, document, checked=True))
    return SyncPage(tuple(items), cursor)
