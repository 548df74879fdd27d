"""Field types shared by the store's message modules, and the bounds on the JSON it keeps. No I/O.

Bounds on JSON are checked by the operations (a refusal is `invalid_arguments`, answered to the
caller), not by the models (a model failure is a malformed frame, refused by the bus): a value
that is valid JSON but too big or too deep for the store is the caller's mistake, not the peer's
corruption. The byte limits keep every reply that carries a whole record inside one frame:
a tool call row holds at most input + result + progress.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Final

from pydantic import Field

from lineup.actors.kernel.errors import ErrorCode, LineUpError
from lineup.facts.limits import MAX_JSON_DEPTH, MAX_SESSION_DATA_BYTES

__all__ = [
    "MAX_INPUT_BYTES",
    "MAX_JSON_DEPTH",
    "MAX_MANIFEST_BYTES",
    "MAX_PROGRESS_BYTES",
    "MAX_RESULT_BYTES",
    "MAX_SESSION_DATA_BYTES",
    "MAX_WIRE_BYTES",
    "MAX_WIRE_DEPTH",
    "HistoryLimit",
    "Id",
    "Limit",
    "Name",
    "Revision",
    "Seq",
    "bounded_json",
    "json_depth",
    "wire_kind",
]

Id = Annotated[str, Field(min_length=1, max_length=200)]
Name = Annotated[str, Field(min_length=1, max_length=100)]
Limit = Annotated[int, Field(ge=1, le=1000)]
Seq = Annotated[int, Field(ge=0)]
Revision = Annotated[int, Field(ge=0)]
HistoryLimit = Annotated[int, Field(ge=1, le=500)]

MAX_INPUT_BYTES: Final = 256 * 1024  # a tool call's input
MAX_RESULT_BYTES: Final = 256 * 1024  # a tool call's result
MAX_PROGRESS_BYTES: Final = 64 * 1024  # a tool call's latest progress
MAX_MANIFEST_BYTES: Final = 256 * 1024  # an installed app's manifest
# An outbound envelope the store queues for a tool call: it carries a result or progress, so it
# may be larger and nest a little deeper than they do.
MAX_WIRE_BYTES: Final = 512 * 1024
MAX_WIRE_DEPTH: Final = 64


_CONTAINERS: Final = (dict, list, tuple)


def json_depth(value: object) -> int:
    """How deeply objects and arrays nest in `value` (a scalar is 0, `{}` is 1). Iterative, so
    a hostile value cannot exhaust the stack."""
    if not isinstance(value, _CONTAINERS):
        return 0
    deepest = 0
    # Only containers are stacked (a scalar adds no depth): most of a value's items are
    # scalars, and each stacked one costs a tuple and a pop (this runs on every step's rows).
    pending: list[tuple[dict[object, object] | list[object] | tuple[object, ...], int]] = [
        (value, 1)
    ]
    while pending:
        item, depth = pending.pop()
        deepest = max(deepest, depth)
        for child in item.values() if isinstance(item, dict) else item:
            if isinstance(child, _CONTAINERS):
                pending.append((child, depth + 1))
    return deepest


def bounded_json(
    value: object, *, max_bytes: int, what: str, max_depth: int = MAX_JSON_DEPTH
) -> str:
    """`value` as compact JSON text. Raises `LineUpError(invalid_arguments)` when it is not strict
    JSON (NaN, Infinity, a lone surrogate), nests deeper than `max_depth`, or takes more than
    `max_bytes` bytes."""
    if json_depth(value) > max_depth:
        raise LineUpError(ErrorCode.INVALID_ARGUMENTS, f"{what} nests deeper than {max_depth}")
    try:
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
        size = len(text.encode())
    except ValueError as exc:  # NaN/Infinity: valid for Python's json; a lone surrogate
        raise LineUpError(ErrorCode.INVALID_ARGUMENTS, f"{what} is not strict JSON") from exc
    if size > max_bytes:
        raise LineUpError(ErrorCode.INVALID_ARGUMENTS, f"{what} is larger than {max_bytes} bytes")
    return text


def wire_kind(wire: dict[str, Any]) -> str:
    """The wire type of an outbound envelope: its `type`, a non-empty name. Raises ValueError
    (a model validation error) otherwise."""
    kind = wire.get("type")
    if not isinstance(kind, str) or not 1 <= len(kind) <= 100:
        raise ValueError("wire needs a `type` of 1 to 100 characters")
    return kind
