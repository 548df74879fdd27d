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

`decode_json` is the bounded parser: it refuses oversize input unread and turns every way
`json.loads` can fail (bad bytes, `RecursionError` on a deep document, an integer too long to
convert) into one `WireLimitError`, never the parser's own exception.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any, Final

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
    """Raise `WireLimitError` unless `document` (parsed JSON) is within every limit."""
    stack: list[tuple[object, int]] = [(document, 1)]
    while stack:
        value, depth = stack.pop()
        if isinstance(value, str):
            _check_string(value)
        elif isinstance(value, bool) or value is None:
            continue
        elif isinstance(value, int):
            if abs(value) > MAX_SAFE_INTEGER:
                raise WireLimitError(ErrorCode.ENVELOPE_MALFORMED, "integer")
        elif isinstance(value, float):
            if not math.isfinite(value):
                raise WireLimitError(ErrorCode.ENVELOPE_MALFORMED, "number")
        elif isinstance(value, dict | list):
            if depth > MAX_DEPTH:
                raise WireLimitError(ErrorCode.ENVELOPE_TOO_DEEP, "depth")
            if isinstance(value, dict):
                if len(value) > MAX_OBJECT_KEYS:
                    raise WireLimitError(ErrorCode.ENVELOPE_TOO_LARGE, "keys")
                for key, item in value.items():
                    if not isinstance(key, str):
                        raise WireLimitError(ErrorCode.ENVELOPE_MALFORMED, "key")
                    _check_string(key)
                    stack.append((item, depth + 1))
            else:
                if len(value) > MAX_ARRAY_ITEMS:
                    raise WireLimitError(ErrorCode.ENVELOPE_TOO_LARGE, "items")
                stack.extend((item, depth + 1) for item in value)
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
    """Bytes of `document` as compact UTF-8 JSON (how it travels)."""
    return len(json.dumps(document, separators=(",", ":"), ensure_ascii=False).encode())
