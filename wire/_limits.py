"""Explicit limits on anything the network hands us, checked before anything else.

Theory of operation
-------------------
An AppServer can relay any bytes at all. Before a document reaches a model, a bus frame or the
database it passes `check_document`, one iterative walk (no recursion, so depth costs no stack)
that refuses, with a stable code:

- nesting deeper than `MAX_DEPTH` (`envelope_too_deep`);
- a string longer than `MAX_STRING_CHARS`, an array longer than `MAX_ARRAY_ITEMS`, an object
  with more than `MAX_OBJECT_KEYS` keys (`envelope_too_large`);
- a number that is not finite or an integer beyond ±2^53, which no peer can round-trip, and a
  string holding a lone surrogate, which no UTF-8 encoder accepts (`envelope_malformed`).

`check_encoded` is the same check for a document that must also fit in a number of bytes (a
view): pydantic-core encodes it first, which proves its strings, and the walk skips them.

`decode_json` is the bounded parser: it refuses oversize input unread and turns every way
`json.loads` can fail (bad bytes, `RecursionError` on a deep document, an integer too long to
convert) into one `WireLimitError`, never the parser's own exception.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable
from typing import Any, Final

import pydantic_core

from lineup.actors.kernel.errors import ErrorCode, LineUpError

__all__ = [
    "MAX_ARRAY_ITEMS",
    "MAX_DEPTH",
    "MAX_ENVELOPE_BYTES",
    "MAX_OBJECT_KEYS",
    "MAX_PAGE_BYTES",
    "MAX_SAFE_INTEGER",
    "MAX_STRING_CHARS",
    "WireLimitError",
    "check_document",
    "check_encoded",
    "decode_json",
    "encoded_size",
]

# The one size limit of a wire envelope, compact UTF-8 JSON: the AppServer, the router and the
# transport all refuse above it.
MAX_ENVELOPE_BYTES: Final = 256 * 1024
# A sync page carries at most the AppServer's batch of envelopes, each within the limit.
MAX_PAGE_BYTES: Final = 16 * 1024 * 1024
MAX_DEPTH: Final = 32  # an envelope is 2 deep; a tool input has 30 levels to itself
MAX_STRING_CHARS: Final = MAX_ENVELOPE_BYTES
MAX_ARRAY_ITEMS: Final = 10_000
MAX_OBJECT_KEYS: Final = 1_000
MAX_SAFE_INTEGER: Final = 2**53 - 1  # what a JavaScript peer reads back exactly

_SURROGATE: Final = re.compile("[\ud800-\udfff]")


class WireLimitError(LineUpError):
    """A document broke a limit or is not JSON at all; `code` says which."""


def _check_string(value: str) -> None:
    if len(value) > MAX_STRING_CHARS:
        raise WireLimitError(ErrorCode.ENVELOPE_TOO_LARGE, "string")
    if not value.isascii() and _SURROGATE.search(value):
        raise WireLimitError(ErrorCode.ENVELOPE_MALFORMED, "lone surrogate")


def check_document(document: object) -> None:
    """Raise `WireLimitError` unless `document` (parsed JSON) is within every limit.

    Only containers go on the stack; a scalar is checked where it is found, by its exact type
    first (what a JSON parser makes), so the walk costs a few type tests per value."""
    if not isinstance(document, dict | list):
        _check_scalar(document)
        return
    _walk(document, strings=True)


def check_encoded(document: dict[str, Any] | list[Any], max_bytes: int) -> int:
    """`check_document` and `encoded_size` in one, for a container whose encoding must stay
    within `max_bytes` (at most `MAX_STRING_CHARS`): the encoding, by pydantic-core, comes
    first, and what it proves is not walked again. It refuses a lone surrogate anywhere
    (`envelope_malformed`, as the walk would), and within `max_bytes` no string can pass
    `MAX_STRING_CHARS`: so the walk skips strings, a document's most values, and checks only
    containers, keys' types and numbers. Raises `WireLimitError` as `check_document` would,
    and `envelope_too_large` past `max_bytes` (after the document's own limits, as checking
    then measuring did). Returns the encoding's bytes."""
    assert max_bytes <= MAX_STRING_CHARS
    try:
        size = len(pydantic_core.to_json(document))
    except pydantic_core.PydanticSerializationError:
        check_document(document)  # says why, with its code
        raise WireLimitError(ErrorCode.ENVELOPE_MALFORMED, "not json") from None
    if size > max_bytes:
        check_document(document)
        raise WireLimitError(ErrorCode.ENVELOPE_TOO_LARGE, "bytes")
    _walk(document, strings=False)  # what the encoding proved of strings, not again
    return size


def _walk(document: dict[Any, Any] | list[Any], *, strings: bool) -> None:
    """The limits of a container's every level, depth first: containers, keys, numbers, and
    its strings if `strings` (else the caller has proved them)."""
    stack: list[tuple[dict[Any, Any] | list[Any], int]] = [(document, 1)]
    while stack:
        container, depth = stack.pop()
        if depth > MAX_DEPTH:
            raise WireLimitError(ErrorCode.ENVELOPE_TOO_DEEP, "depth")
        items: Iterable[Any]  # parsed JSON: checked below, by type
        if isinstance(container, dict):
            if len(container) > MAX_OBJECT_KEYS:
                raise WireLimitError(ErrorCode.ENVELOPE_TOO_LARGE, "keys")
            for key in container:
                if type(key) is not str and not isinstance(key, str):
                    raise WireLimitError(ErrorCode.ENVELOPE_MALFORMED, "key")
                if strings and (len(key) > MAX_STRING_CHARS or not key.isascii()):
                    _check_string(key)
            items = container.values()
        else:
            if len(container) > MAX_ARRAY_ITEMS:
                raise WireLimitError(ErrorCode.ENVELOPE_TOO_LARGE, "items")
            items = container
        for item in items:
            kind = type(item)
            if kind is str:
                if strings and (len(item) > MAX_STRING_CHARS or not item.isascii()):
                    _check_string(item)
            elif kind is dict or kind is list:
                stack.append((item, depth + 1))
            elif kind is int:
                if not -MAX_SAFE_INTEGER <= item <= MAX_SAFE_INTEGER:
                    raise WireLimitError(ErrorCode.ENVELOPE_MALFORMED, "integer")
            elif kind is float:
                if item - item != 0.0:  # NaN and ±inf alone
                    raise WireLimitError(ErrorCode.ENVELOPE_MALFORMED, "number")
            elif item is None or kind is bool:
                continue
            elif isinstance(item, dict | list):
                stack.append((item, depth + 1))
            else:
                _check_scalar(item)


def _check_scalar(value: object) -> None:
    """A value that is not a container, of any type (subclasses included)."""
    if isinstance(value, str):
        _check_string(value)
    elif isinstance(value, bool) or value is None:
        return
    elif isinstance(value, int):
        if abs(value) > MAX_SAFE_INTEGER:
            raise WireLimitError(ErrorCode.ENVELOPE_MALFORMED, "integer")
    elif isinstance(value, float):
        if not math.isfinite(value):
            raise WireLimitError(ErrorCode.ENVELOPE_MALFORMED, "number")
    else:
        raise WireLimitError(ErrorCode.ENVELOPE_MALFORMED, type(value).__name__)


def _refuse_constant(name: str) -> Any:
    raise ValueError(name)  # NaN / Infinity are not JSON


def decode_json(data: bytes | str, *, max_bytes: int = MAX_ENVELOPE_BYTES) -> Any:
    """Parse one JSON document of at most `max_bytes`, then `check_document` it.

    Raises `WireLimitError`: `envelope_too_large` past the size (unparsed), `envelope_too_deep`
    for nesting, `envelope_malformed` for anything that is not JSON.
    """
    if len(data) > max_bytes:
        raise WireLimitError(ErrorCode.ENVELOPE_TOO_LARGE, "bytes")
    try:
        document = json.loads(data, parse_constant=_refuse_constant)
    except RecursionError as exc:
        raise WireLimitError(ErrorCode.ENVELOPE_TOO_DEEP, "depth") from exc
    except (ValueError, UnicodeDecodeError) as exc:  # JSONDecodeError, int digits, bad bytes
        raise WireLimitError(ErrorCode.ENVELOPE_MALFORMED, "not json") from exc
    check_document(document)
    return document


def encoded_size(document: object) -> int:
    """Bytes of `document` (a checked one) as compact UTF-8 JSON, as the bus writes it: by
    pydantic-core, four times as fast as `json.dumps` (a float's exponent may be a byte shorter:
    `1e-7`, not `1e-07`)."""
    return len(pydantic_core.to_json(document))
