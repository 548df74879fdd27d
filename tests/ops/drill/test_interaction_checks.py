"""The drill's interaction invariant catches each way the one-terminal-state rule can break,
when fed a broken record."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import Any, TypedDict, Unpack

from lineup.ops.drill import Evidence, Expected, check
from lineup.ops.drill._check import InteractionRecord, interaction_endings

RULE = "interactions_one_terminal_state"
RESULT, ERROR = "lineup.v1.tool.result", "lineup.v1.tool.error"


def _healthy() -> tuple[Expected, Evidence]:
    """An answered choice, a dismissed confirm, an expired input, a notice, a bogus session."""
    asked = (
        ("q1", "choice", "answer", False),
        ("q2", "confirm", "dismiss", False),
        ("q3", "input", "expire", False),
        ("q4", "notice", "dismiss", False),
        ("q5", "choice", "race", False),
        ("q6", "confirm", "answer", True),
    )
    evidence = Evidence(
        to_agent=[
            ("r1", RESULT, {"call_id": "q1", "result": {"action_ids": ["a1"]}}),
            ("r2", ERROR, {"call_id": "q2", "code": "interaction_dismissed"}),
            ("r3", ERROR, {"call_id": "q3", "code": "operation_expired"}),
            ("r4", RESULT, {"call_id": "q4", "result": {"acknowledged": False}}),
            ("r5", ERROR, {"call_id": "q5", "code": "interaction_dismissed"}),
            ("r6", ERROR, {"call_id": "q6", "code": "app_session_invalid"}),
        ],
        inbound=Counter(),
        calls={
            f"q{n}": s
            for n, s in enumerate(
                ("completed", "cancelled", "expired", "completed", "cancelled", "rejected"), 1
            )
        },
        exit_code=0,
        interactions=[
            InteractionRecord("i1", "q1", "completed", None, {"action_ids": ["a1"]}),
            InteractionRecord("i2", "q2", "cancelled", "interaction_dismissed"),
            InteractionRecord("i3", "q3", "expired", "operation_expired"),
            InteractionRecord("i4", "q4", "completed", None, {"acknowledged": False}),
            InteractionRecord("i5", "q5", "cancelled", "interaction_dismissed"),
            InteractionRecord("m1", None, "cancelled", "app_closed"),  # a MiniApp's own
        ],
    )
    expected = Expected(
        agent_texts=(), calls=tuple(c for c, *_ in asked), user_messages=(), interactions=asked
    )
    return expected, evidence


def _examples(expected: Expected, evidence: Evidence) -> list[str]:
    (rule,) = [r for r in check(expected, evidence) if r.name == RULE]
    assert rule.passed == (rule.examples == [])
    return rule.examples


class _Changes(TypedDict, total=False):
    """The fields of an InteractionRecord a test changes."""

    state: str
    terminal_code: str | None
    result: Any


def _with(evidence: Evidence, index: int, **changes: Unpack[_Changes]) -> Evidence:
    records = list(evidence.interactions)
    records[index] = replace(records[index], **changes)
    return replace(evidence, interactions=records)


def test_a_healthy_record_of_interactions_passes() -> None:
    assert _examples(*_healthy()) == []


def test_an_interaction_left_open_is_caught_whoever_asked_it() -> None:
    expected, evidence = _healthy()
    assert _examples(expected, _with(evidence, 5, state="presented")) == ["m1: presented"]
    assert _examples(expected, _with(evidence, 4, state="pending"))[0] == "i5: pending"


def test_a_second_terminal_message_at_the_agent_is_caught() -> None:
    expected, evidence = _healthy()
    evidence.to_agent.append(("r1b", ERROR, {"call_id": "q1", "code": "operation_expired"}))
    assert _examples(expected, evidence) == ["q1: 2 terminal messages at the Agent"]


def test_a_result_the_store_does_not_agree_with_is_caught() -> None:
    expected, evidence = _healthy()
    assert _examples(expected, _with(evidence, 4, state="completed")) == [
        "q5: the Agent got interaction_dismissed, the store completed"
    ]
    other = _with(evidence, 0, result={"action_ids": ["a2"]})
    assert _examples(expected, other) == ["q1: the Agent's result is not the stored one"]
    expired = _with(evidence, 0, state="expired")
    assert _examples(expected, expired)[0] == "q1: the Agent got a result, the store expired"


def test_an_error_code_that_names_another_ending_is_caught() -> None:
    expected, evidence = _healthy()
    evidence.to_agent[2] = ("r3", ERROR, {"call_id": "q3", "code": "cancelled_by_user"})
    assert _examples(expected, evidence) == [
        "q3: the Agent got cancelled_by_user, the store expired"
    ]


def test_a_missing_or_unasked_interaction_is_caught() -> None:
    expected, evidence = _healthy()
    gone = replace(evidence, interactions=evidence.interactions[1:])
    assert _examples(expected, gone) == ["q1: 0 interactions"]
    extra = replace(
        evidence, interactions=[*evidence.interactions, InteractionRecord("x", "qx", "expired")]
    )
    assert _examples(expected, extra) == ["qx: an interaction for a question nobody asked"]


def test_a_question_in_a_bogus_sub_session_must_create_nothing_and_be_refused() -> None:
    expected, evidence = _healthy()
    created = replace(
        evidence, interactions=[*evidence.interactions, InteractionRecord("b", "q6", "expired")]
    )
    assert _examples(expected, created) == [
        "q6: a bogus sub-session gave 1 rows, ['app_session_invalid']"
    ]


def test_a_question_only_one_side_acted_on_must_end_as_scripted_but_a_notice_need_not() -> None:
    expected, evidence = _healthy()
    evidence.to_agent[1] = ("r2", RESULT, {"call_id": "q2", "result": {"approved": True}})
    answered = _with(evidence, 1, state="completed", result={"approved": True})
    assert _examples(expected, answered) == ["q2: scripted dismiss but ended completed"]


def test_a_question_refused_for_its_stale_revision_needs_no_interaction() -> None:
    expected, evidence = _healthy()
    evidence.to_agent[0] = ("r1", ERROR, {"call_id": "q1", "code": "inventory_revision_mismatch"})
    stale = replace(evidence, interactions=evidence.interactions[1:])
    assert _examples(expected, stale) == []
    evidence.to_agent[0] = ("r1", ERROR, {"call_id": "q1", "code": "tool_input_invalid"})
    assert _examples(expected, stale) == ["q1: 0 interactions"]


def test_a_race_must_end_the_way_of_one_of_its_two_sides() -> None:
    expected, evidence = _healthy()
    evidence.to_agent[4] = ("r5", ERROR, {"call_id": "q5", "code": "operation_expired"})
    expired = _with(evidence, 4, state="expired", terminal_code="operation_expired")
    assert _examples(expected, expired) == ["q5: scripted race but ended expired"]


def test_the_endings_are_counted_by_script_with_notices_and_bogus_sessions_apart() -> None:
    expected, evidence = _healthy()
    assert interaction_endings(expected, evidence) == {
        "answer": {"completed": 1},
        "bogus_sub_session": {"refused:app_session_invalid": 1},
        "dismiss": {"cancelled": 1},
        "expire": {"expired": 1},
        "notice": {"completed": 1},
        "race": {"cancelled": 1},
    }
    evidence.to_agent[0] = ("r1", ERROR, {"call_id": "q1", "code": "inventory_revision_mismatch"})
    stale = replace(evidence, interactions=evidence.interactions[1:])
    assert interaction_endings(expected, stale)["answer"] == {
        "refused:inventory_revision_mismatch": 1
    }
    silent = replace(stale, to_agent=stale.to_agent[1:])
    assert interaction_endings(expected, silent)["answer"] == {"open": 1}
