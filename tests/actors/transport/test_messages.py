"""The session the transport keeps for the router (`actors/transport/messages.py`): what it
writes reads back the same, and anything else reads as no session at all, never an error."""

from __future__ import annotations

import json

import pytest

from lineup.actors.transport.messages import AppServerSession, session_of

SESSION = AppServerSession(user_id="user-1", agent_id="agent-1", conversation_id="conv-1")


def test_the_session_the_transport_writes_reads_back_the_same() -> None:
    assert session_of(SESSION.model_dump_json()) == SESSION
    # An AppServer may say more of its session: what the router does not use is ignored.
    more = {**SESSION.model_dump(), "region": "eu"}
    assert session_of(json.dumps(more)) == SESSION


@pytest.mark.parametrize(
    "value",
    [
        "",
        "not json",
        "[1]",
        '"conv-1"',
        "[" * 100_000,  # deeper than the parser recurses
        json.dumps({"user_id": "user-1", "agent_id": "agent-1"}),  # no conversation
        json.dumps({"conversation_id": "conv-1"}),  # whom to send as is unknown
        json.dumps({**SESSION.model_dump(), "agent_id": 7}),
        json.dumps({**SESSION.model_dump(), "note": None}),  # not an object of strings
    ],
)
def test_anything_else_is_no_session(value: str) -> None:
    assert session_of(value) is None
