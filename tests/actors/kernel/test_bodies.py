"""What a frame's body holds (`actors/kernel/_bodies.py`): a message as JSON, and the error
reply both ways, without a bus."""

from __future__ import annotations

import json

import pytest

from lineup.actors.kernel import ActorRestarted, ErrorCode, LineUpError, LocalProtocolError
from lineup.actors.kernel._bodies import MAX_ERROR_MESSAGE, error_body, refusal_of, to_json
from lineup.facts.errors import FAULT

from ._messages import TreeRequest


def test_the_words_nan_and_infinity_in_a_string_are_json_and_pass() -> None:
    data = to_json(TreeRequest(tree={"NaN": "-Infinity", "x": 1.0}))
    assert json.loads(data)["tree"] == {"NaN": "-Infinity", "x": 1.0}


def test_a_non_finite_number_is_refused_to_its_sender_as_frame_malformed() -> None:
    with pytest.raises(LocalProtocolError) as info:
        to_json(TreeRequest(tree={"n": float("nan")}))
    assert info.value.code is ErrorCode.FRAME_MALFORMED


@pytest.mark.parametrize("code", list(ErrorCode), ids=str)
def test_an_error_body_names_the_code_its_fault_and_a_bounded_message(code: ErrorCode) -> None:
    body = error_body(code, "m" * (MAX_ERROR_MESSAGE + 1))
    assert body == {"code": code.value, "fault": FAULT[code], "message": "m" * MAX_ERROR_MESSAGE}
    again = refusal_of(dict(body))
    assert (type(again), again.code, again.fault) == (
        ActorRestarted if code is ErrorCode.ACTOR_RESTARTED else LineUpError,
        code,
        FAULT[code],
    )


@pytest.mark.parametrize(
    "body",
    [{}, {"code": "no_such_code"}, {"code": 7, "fault": "user"}, {"fault": "caller"}],
    ids=["empty", "unknown", "not-a-string", "a-fault-alone"],
)
def test_an_error_body_without_a_known_code_is_an_internal_error(body: dict[str, object]) -> None:
    error = refusal_of(body)
    assert (error.code, error.fault, error.message) == (ErrorCode.INTERNAL_ERROR, "runtime", "")
