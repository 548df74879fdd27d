"""The drill's questions are valid requests of every kind, and its scripted user's answers
valid answers to them, by the runtime's own rules (`lineup.sdk.interactions`): a drill that
asked or answered wrongly would test refusals, not races."""

from __future__ import annotations

import random

from lineup.ops.drill._asking import EXPIRY_MS, KINDS, answer_for, request_for
from lineup.sdk import interactions as std
from lineup.sdk.schema import validate


def test_every_drill_question_is_a_valid_request_and_every_answer_a_valid_answer() -> None:
    tools = {t.method: t for t in std.TOOLS}
    for kind in KINDS:
        for n in range(6):
            tool_input = request_for(kind, n)
            if kind != "notice":
                tool_input["expires_in_ms"] = EXPIRY_MS
            in_session = {**tool_input, "app_session_context": {"app_session_id": "s"}}
            assert validate(tools[f"interaction.{kind}"].input_schema, in_session) == []
            request, expires = std.request_of(f"interaction.{kind}", tool_input)
            assert expires == (None if kind == "notice" else EXPIRY_MS)
            view = {"kind": kind, "request": request.model_dump(mode="json")}
            for seed in range(40):
                std.result_of(request, answer_for(view, random.Random(seed)))
