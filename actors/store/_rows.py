"""What every area's operations share: their contract, and the helpers they build rows with.

An operation is one blocking function per request, `fn(conn, request, now) -> reply` (each area's
`operations`, served by the handler table in `_table`). Each runs on the database thread inside
its own savepoint of a group-committed transaction (see `_committer`), so it may read what
earlier operations of the same batch wrote, and it must not commit or begin anything itself. A
function that raises `LineUpError` refuses only its own request, and a request that writes more
than one table is still ONE transaction: the savepoint rolls back everything it wrote.

Idempotency is in the SQL, not in memory, so it survives restarts: writes are
`INSERT ... ON CONFLICT DO NOTHING` on the request's natural key, and acknowledgements are
`UPDATE ... WHERE acked_at IS NULL`, whose change count tells the first acknowledgement from a
repeat.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from pydantic_core import from_json

from lineup.actors.kernel.errors import ErrorCode, LineUpError
from lineup.facts.limits import REPLY_BODY_BUDGET

from ._db import Connection

__all__ = [
    "REPLY_BODY_BUDGET",
    "body_cost",
    "int_or_none",
    "json_text",
    "stored_object",
    "within_budget",
]


Row = TypeVar("Row")


def json_text(body: dict[str, Any]) -> str:
    """`body` as the compact JSON stored in a TEXT column. Raises `invalid_arguments` for a
    value that is not strict JSON."""
    try:
        text = json.dumps(body, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
        text.encode()  # a lone surrogate: no UTF-8 for it, in the database or anywhere
    except ValueError as exc:  # NaN/Infinity: valid for Python's json, not for anyone else
        raise LineUpError(ErrorCode.INVALID_ARGUMENTS, "body is not strict JSON") from exc
    return text


def stored_object(raw: object, *, max_bytes: int = REPLY_BODY_BUDGET) -> dict[str, Any] | None:
    """The JSON object a body column holds, or None when it holds anything else: not text, not
    UTF-8, not strict JSON (NaN, a lone surrogate escape, which SQLite's `json_valid` takes),
    nesting past the parser's limit, not an object, or more than `max_bytes`. Never raises: a
    reader skips such a row (`dead_letters` quarantines it), so one bad row costs only itself.
    Select the column `CAST(… AS BLOB)`: a TEXT value that is not UTF-8 would otherwise fail the
    whole fetch."""
    if not isinstance(raw, bytes | str) or len(raw) > max_bytes:
        return None
    try:
        value = from_json(raw, allow_inf_nan=False)
    except ValueError:
        return None
    return value if type(value) is dict else None


def int_or_none(conn: Connection, sql: str, bindings: tuple[object, ...]) -> int | None:
    """The first column of the first row, an integer, or None when there is no row."""
    # fetchall, never fetchone: a statement left running would block RELEASE of the savepoint.
    rows = conn.execute(sql, bindings).fetchall()
    if not rows:
        return None
    value = rows[0][0]
    assert isinstance(value, int)
    return value


def within_budget(rows: Sequence[Row], cost: Callable[[Row], int]) -> list[Row]:
    """The longest prefix of `rows` whose total `cost` (bytes) fits `REPLY_BODY_BUDGET`,
    never empty when `rows` is not."""
    kept: list[Row] = []
    used = 0
    for row in rows:
        used += cost(row)
        if kept and used > REPLY_BODY_BUDGET:
            break
        kept.append(row)
    return kept


def body_cost(index: int) -> Callable[[Sequence[Any]], int]:
    """The cost, for `within_budget`, of a row whose stored JSON body is column `index` (text,
    or bytes when selected `CAST(… AS BLOB)`)."""

    def cost(row: Sequence[Any]) -> int:
        body = row[index]
        return len(body) if isinstance(body, bytes) else len(body.encode())

    return cost
