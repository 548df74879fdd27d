"""Session data the SDK refuses before it is sent: JSON is JSON (issue 11, finding 10)."""

from __future__ import annotations

import math
from typing import Any

import pytest
import trio

from lineup.actors.kernel import ErrorCode, LineUpError, Message
from lineup.sdk import _services
from lineup.sdk import protocol as p


class Host:
    """A runtime channel that records what would have been sent."""

    def __init__(self) -> None:
        self.sent: list[Message] = []

    async def call(self, to: str, msg: Message, expect: type[Any]) -> Any:
        self.sent.append(msg)
        return p.CommandReceipt(id="x", seq=1, changed=True)


@pytest.mark.parametrize(
    "data",
    [
        {"x": math.nan},
        {"x": math.inf},
        {"x": [1.0, -math.inf]},
        {"deep": {"er": [{"x": math.nan}]}},
        {"t": "\ud800"},
        {"\udfff": 1},
    ],
    ids=["nan", "infinity", "minus-infinity-in-a-list", "nested-nan", "lone-surrogate", "key"],
)
def test_session_data_that_is_not_strict_json_is_refused_before_it_is_sent(
    data: dict[str, Any],
) -> None:
    host = Host()
    session = _services.SessionData(host)

    async def main() -> None:
        with pytest.raises(LineUpError) as info:
            await session.replace("i-1", data, 0)
        assert info.value.code is ErrorCode.INVALID_ARGUMENTS

    trio.run(main)
    assert host.sent == []  # never null on the wire


def test_strict_json_session_data_is_sent_as_it_is() -> None:
    host = Host()
    session = _services.SessionData(host)
    data = {"n": 1.5, "e": "\U0001f600", "l": [None, True, "é"], "t": (1, 2)}

    async def main() -> int:
        return await session.replace("i-1", data, 0)

    assert trio.run(main) == 1
    assert [m.data for m in host.sent if isinstance(m, p.SessionDataReplaceRequest)] == [data]
