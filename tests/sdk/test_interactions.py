"""The standard interactions (`sdk/interactions.py`): requests, tools, results. No I/O.

Property tests state what holds for every input: every valid request is an input its tool's
schema accepts and `request_of` reads back; every valid answer normalises to a result its output
schema accepts; every broken input or answer is refused with its one code."""

from __future__ import annotations

import math
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from lineup.actors.kernel import ErrorCode, LineUpError
from lineup.sdk.interactions import (
    DEFAULT_EXPIRES_IN_MS,
    LEGACY,
    MAX_EXPIRES_IN_MS,
    MAX_TEXT,
    MAX_TEXTAREA,
    MIN_EXPIRES_IN_MS,
    REQUEST,
    TOOLS,
    ChoiceRequest,
    InputRequest,
    NoticeRequest,
    StandardInteractionRequest,
    app_session_of,
    is_cancel,
    output_schema_of,
    request_of,
    result_of,
)
from lineup.sdk.manifest import ToolDescriptor
from lineup.sdk.schema import InputInvalid, check_subset, validate

TOOL_OF = {tool.method.removeprefix("interaction."): tool for tool in TOOLS}

# ------------------------------------------------------------------------------ strategies

ids = st.from_regex(r"\A[A-Za-z0-9][A-Za-z0-9_.:-]{0,20}\Z")
texts = st.text(min_size=1, max_size=30)
labels = st.text(min_size=1, max_size=40)
finite = st.floats(allow_nan=False, allow_infinity=False, min_value=-1e9, max_value=1e9)


@st.composite
def actions(draw: st.DrawFn) -> list[dict[str, Any]]:
    keys = draw(st.lists(ids, min_size=1, max_size=20, unique=True))
    made = []
    for key in keys:
        action: dict[str, Any] = {"id": key, "label": draw(labels)}
        if draw(st.booleans()):
            action["description"] = draw(st.text(max_size=50))
        made.append(action)
    return made


@st.composite
def input_fields(draw: st.DrawFn) -> list[dict[str, Any]]:
    keys = draw(st.lists(ids, min_size=1, max_size=12, unique=True))
    made = []
    for key in keys:
        kind = draw(st.sampled_from(["text", "textarea", "number"]))
        spec: dict[str, Any] = {"id": key, "label": draw(labels), "type": kind}
        if draw(st.booleans()):
            spec["required"] = draw(st.booleans())
        if kind == "number":
            low, high = sorted(draw(st.lists(finite, min_size=2, max_size=2)))
            if draw(st.booleans()):
                spec["minimum"] = low
            if draw(st.booleans()):
                spec["maximum"] = high
        else:
            cap = MAX_TEXTAREA if kind == "textarea" else MAX_TEXT
            low, high = sorted(draw(st.lists(st.integers(0, cap), min_size=2, max_size=2)))
            if draw(st.booleans()):
                spec["min_length"] = min(low, 8)
            if draw(st.booleans()):
                spec["max_length"] = max(
                    high, 1 if spec.get("required") else 0, spec.get("min_length", 0)
                )
            if draw(st.booleans()):
                spec["placeholder"] = draw(st.text(max_size=20))
        made.append(spec)
    return made


def _labels(draw: st.DrawFn, *names: str) -> dict[str, Any]:
    return {name: draw(st.text(min_size=1, max_size=40)) for name in names if draw(st.booleans())}


@st.composite
def tool_inputs(draw: st.DrawFn) -> tuple[str, dict[str, Any]]:
    """(kind, a valid tool input of `interaction.<kind>`)."""
    kind = draw(st.sampled_from(["notice", "choice", "confirm", "input"]))
    body: dict[str, Any] = {"title": draw(texts)}
    if kind == "notice":
        body |= {"message": draw(texts), **_labels(draw, "acknowledge_label")}
    elif kind == "choice":
        mode = draw(st.sampled_from(["single-choice", "multi-choice", "button"]))
        body |= {"prompt": draw(texts), "mode": mode, "actions": draw(actions())}
    elif kind == "confirm":
        body |= {"prompt": draw(texts), **_labels(draw, "approve_label", "cancel_label")}
    else:
        body |= {"prompt": draw(texts), "fields": draw(input_fields())}
        body |= _labels(draw, "submit_label", "cancel_label")
    if kind != "notice" and draw(st.booleans()):
        body["expires_in_ms"] = draw(st.integers(MIN_EXPIRES_IN_MS, MAX_EXPIRES_IN_MS))
    if draw(st.booleans()):
        body["app_session_context"] = {"app_session_id": draw(ids)}
    return kind, body


def _text_value(draw: st.DrawFn, spec: Any) -> str:
    low = max(spec.min_length or 0, 1 if spec.required else 0)
    high = min(spec.cap if spec.max_length is None else spec.max_length, low + 30)
    return draw(st.text(min_size=low, max_size=high))


@st.composite
def answers(draw: st.DrawFn, request: StandardInteractionRequest) -> dict[str, Any]:
    """A valid answer to `request`, as a client could send it (unordered, with repeats)."""
    if request.kind == "notice":
        return {"acknowledged": draw(st.booleans())}
    if request.kind == "confirm":
        return {"approved": draw(st.booleans())}
    if isinstance(request, ChoiceRequest):
        known = [action.id for action in request.actions]
        if request.mode == "multi-choice":
            chosen = draw(st.lists(st.sampled_from(known), min_size=1, max_size=30))
        else:
            chosen = [draw(st.sampled_from(known))] * draw(st.integers(1, 3))
        return {"action_ids": chosen}
    assert isinstance(request, InputRequest)
    values: dict[str, Any] = {}
    for spec in request.fields:
        if not spec.required and draw(st.booleans()):
            continue
        if spec.type == "number":
            low = -1e9 if spec.minimum is None else spec.minimum
            high = 1e9 if spec.maximum is None else spec.maximum
            number = draw(st.floats(low, high, allow_nan=False) | st.just(low))
            values[spec.id] = (
                int(number) if number.is_integer() and low <= int(number) <= high else number
            )
        else:
            values[spec.id] = _text_value(draw, spec)
    return {"values": dict(reversed(list(values.items())))}


requests_and_answers = tool_inputs().flatmap(
    lambda made: st.tuples(st.just(made), answers(request_of(f"interaction.{made[0]}", made[1])[0]))
)

# ------------------------------------------------------------------------------ the tools


def test_the_four_tools_are_interactive_descriptors_inside_the_schema_subset() -> None:
    assert [tool.method for tool in TOOLS] == [
        "interaction.notice", "interaction.choice", "interaction.confirm", "interaction.input",
    ]  # fmt: skip
    for tool in TOOLS:
        again = ToolDescriptor.model_validate(tool.model_dump())
        assert again == tool
        assert tool.handling == "interactive"
        assert tool.activation_requirement == "activation_not_required"
        assert tool.timeout_ms == MAX_EXPIRES_IN_MS
        assert tool.description
        check_subset(tool.input_schema)
        check_subset(tool.output_schema)
        properties = tool.input_schema["properties"]
        assert "app_session_context" in properties
        assert ("expires_in_ms" in properties) == (tool.method != "interaction.notice")
        assert "kind" not in properties


def test_the_legacy_names_map_to_the_tools() -> None:
    assert LEGACY == {
        "choice": "interaction.choice", "confirm": "interaction.confirm",
        "input": "interaction.input",
    }  # fmt: skip
    body = {"title": "t", "prompt": "p"}
    assert request_of("confirm", body) == request_of("interaction.confirm", body)


@settings(deadline=None, max_examples=300)
@given(made=tool_inputs())
def test_every_valid_request_is_an_input_its_tool_accepts_and_reads_back(
    made: tuple[str, dict[str, Any]],
) -> None:
    kind, body = made
    assert validate(TOOL_OF[kind].input_schema, body) == []
    request, expires = request_of(f"interaction.{kind}", body)
    assert request.kind == kind
    assert expires == (
        None if kind == "notice" else body.get("expires_in_ms", DEFAULT_EXPIRES_IN_MS)
    )
    assert app_session_of(body) == body.get("app_session_context", {}).get("app_session_id")
    # The request as stored reads back as itself (the router keeps it as JSON).
    assert REQUEST.validate_python(request.model_dump(mode="json")) == request
    check_subset(output_schema_of(request))


@settings(deadline=None, max_examples=300)
@given(made=requests_and_answers)
def test_every_valid_answer_normalises_to_a_result_its_output_schema_accepts(
    made: tuple[tuple[str, dict[str, Any]], dict[str, Any]],
) -> None:
    (kind, body), answer = made
    request, _ = request_of(f"interaction.{kind}", body)
    result = result_of(request, answer)
    assert validate(output_schema_of(request), result) == []
    if kind != "input":  # the subset cannot name an input's field ids statically
        assert validate(TOOL_OF[kind].output_schema, result) == []
    assert result_of(request, result) == result  # normal already
    assert not is_cancel(answer)
    if isinstance(request, ChoiceRequest):
        order = [action.id for action in request.actions]
        chosen = result["action_ids"]
        assert chosen == sorted(set(answer["action_ids"]), key=order.index)
    if isinstance(request, InputRequest):
        assert list(result["values"]) == [f.id for f in request.fields if f.id in answer["values"]]


# ------------------------------------------------------------------------------ refusals


def _code(call: Any, *args: Any) -> ErrorCode:
    with pytest.raises(LineUpError) as caught:
        call(*args)
    return caught.value.code


CHOICE = {"title": "t", "prompt": "p", "mode": "single-choice",
          "actions": [{"id": "a", "label": "A"}, {"id": "b", "label": "B"}]}  # fmt: skip
INPUT: dict[str, Any] = {
    "title": "t", "prompt": "p",
    "fields": [
        {"id": "name", "label": "Name", "type": "text", "required": True, "max_length": 5},
        {"id": "age", "label": "Age", "type": "number", "minimum": 0, "maximum": 150},
        {"id": "bio", "label": "Bio", "type": "textarea"},
    ],
}  # fmt: skip


def one_field(**spec: Any) -> dict[str, Any]:
    """An input of one field `n`, of `spec` over a text field's defaults."""
    return INPUT | {"fields": [{"id": "n", "label": "N", "type": "text"} | spec]}


def choice_of(count: int, **action: Any) -> dict[str, Any]:
    return CHOICE | {"actions": [{"id": f"a{i}", "label": "A"} | action for i in range(count)]}


WIDE = "\U0001f600"  # four bytes of UTF-8 each
BAD_INPUTS: list[tuple[str, dict[str, Any]]] = [
    ("notice", {"title": "t"}),
    ("notice", {"title": "t", "message": "m", "expires_in_ms": 60_000}),
    ("notice", {"title": "", "message": "m"}),
    ("notice", {"title": "t" * 201, "message": "m"}),
    ("notice", {"title": "t", "message": "m", "kind": "notice"}),
    ("notice", {"title": "t", "message": "m", "extra": 1}),
    ("choice", CHOICE | {"actions": []}),
    ("choice", CHOICE | {"actions": [{"id": "a", "label": "A"}] * 2}),
    ("choice", CHOICE | {"actions": [{"id": "-a", "label": "A"}]}),
    ("choice", choice_of(21)),
    ("choice", CHOICE | {"mode": "dropdown"}),
    ("choice", CHOICE | {"expires_in_ms": MIN_EXPIRES_IN_MS - 1}),
    ("choice", CHOICE | {"expires_in_ms": MAX_EXPIRES_IN_MS + 1}),
    ("choice", CHOICE | {"expires_in_ms": "60000"}),
    ("choice", CHOICE | {"expires_in_ms": True}),
    ("choice", CHOICE | {"app_session_context": {"app_session_id": ""}}),
    ("choice", CHOICE | {"app_session_context": "s-1"}),
    # Valid piece by piece, but more than the store keeps of one request.
    ("choice", choice_of(20, label=WIDE * 80, description=WIDE * 400) | {"prompt": WIDE * 8192}),
    ("confirm", {"title": "t", "prompt": "p", "approve_label": "x" * 41}),
    ("input", INPUT | {"fields": []}),
    ("input", INPUT | {"fields": [INPUT["fields"][0]] * 2}),
    (
        "input",
        INPUT | {"fields": [{"id": f"f{i}", "label": "F", "type": "text"} for i in range(13)]},
    ),
    ("input", one_field(type="password")),
    ("input", one_field(type="number", max_length=3)),
    ("input", one_field(minimum=3)),
    ("input", one_field(max_length=MAX_TEXT + 1)),
    ("input", one_field(type="textarea", min_length=MAX_TEXTAREA + 1)),
    ("input", one_field(min_length=3, max_length=2)),
    ("input", one_field(required=True, max_length=0)),
    ("input", one_field(required=1)),
    ("input", one_field(type="number", minimum=3, maximum=2)),
    ("input", one_field(type="number", minimum=math.inf)),
    ("input", one_field(type="number", minimum="1")),
]


@pytest.mark.parametrize(("kind", "body"), BAD_INPUTS)
def test_a_bad_input_is_refused_tool_input_invalid(kind: str, body: dict[str, Any]) -> None:
    assert _code(request_of, f"interaction.{kind}", body) is ErrorCode.TOOL_INPUT_INVALID


@pytest.mark.parametrize(
    ("kind", "body", "pointer"),
    [
        ("choice", CHOICE | {"kind": "confirm"}, "/kind"),
        (
            "notice",
            {"title": "t", "message": "m", "expires_in_ms": MIN_EXPIRES_IN_MS},
            "/expires_in_ms",
        ),
        ("choice", CHOICE | {"expires_in_ms": MAX_EXPIRES_IN_MS + 1}, "/expires_in_ms"),
        ("choice", CHOICE | {"app_session_context": "s-1"}, "/app_session_context"),
        (
            "choice",
            CHOICE | {"app_session_context": {"app_session_id": ""}},
            "/app_session_context/app_session_id",
        ),
        ("input", one_field(type="number", max_length=3), "/fields/0"),
        ("input", INPUT | {"fields": [INPUT["fields"][0]] * 2}, ""),  # the request's own check
        ("choice", {"title": "t", "prompt": "p", "mode": "single-choice"}, "/actions"),
    ],
)
def test_a_bad_input_names_the_offending_field_by_its_json_pointer(
    kind: str, body: dict[str, Any], pointer: str
) -> None:
    with pytest.raises(InputInvalid) as caught:
        request_of(f"interaction.{kind}", body)
    assert (caught.value.code, caught.value.pointer) == (ErrorCode.TOOL_INPUT_INVALID, pointer)


def test_a_tool_that_is_no_interaction_is_a_misuse() -> None:
    assert _code(request_of, "task-dashboard.open", {}) is ErrorCode.INVALID_ARGUMENTS


def test_the_expiry_defaults_to_fifteen_minutes_and_takes_its_bounds() -> None:
    body = {"title": "t", "prompt": "p"}
    assert request_of("interaction.confirm", body)[1] == DEFAULT_EXPIRES_IN_MS == 15 * 60_000
    for bound in (MIN_EXPIRES_IN_MS, MAX_EXPIRES_IN_MS):
        assert request_of("interaction.confirm", body | {"expires_in_ms": bound})[1] == bound
    assert request_of("interaction.notice", {"title": "t", "message": "m"})[1] is None


def _request(tool: str, body: dict[str, Any]) -> StandardInteractionRequest:
    return request_of(tool, body)[0]


@pytest.mark.parametrize(
    ("tool", "body", "answer"),
    [
        ("interaction.notice", {"title": "t", "message": "m"}, {"acknowledged": 1}),
        ("interaction.notice", {"title": "t", "message": "m"}, {"approved": True}),
        ("interaction.confirm", {"title": "t", "prompt": "p"}, {"approved": "yes"}),
        ("interaction.confirm", {"title": "t", "prompt": "p"}, {"approved": True, "x": 1}),
        ("interaction.confirm", {"title": "t", "prompt": "p"}, {"cancelled": True}),
        ("interaction.choice", CHOICE, {"action_ids": ["c"]}),
        ("interaction.choice", CHOICE, {"action_ids": []}),
        ("interaction.choice", CHOICE, {"action_ids": ["a", "b"]}),
        ("interaction.choice", CHOICE | {"mode": "multi-choice"}, {"action_ids": []}),
        ("interaction.choice", CHOICE, {"action_ids": "a"}),
        ("interaction.choice", CHOICE, {"action_ids": [1]}),
        ("interaction.input", INPUT, {"values": {}}),
        ("interaction.input", INPUT, {"values": {"name": ""}}),
        ("interaction.input", INPUT, {"values": {"name": "toolong"}}),
        ("interaction.input", INPUT, {"values": {"name": "a", "other": "x"}}),
        ("interaction.input", INPUT, {"values": {"name": "a", "age": 151}}),
        ("interaction.input", INPUT, {"values": {"name": "a", "age": -1}}),
        ("interaction.input", INPUT, {"values": {"name": "a", "age": "3"}}),
        ("interaction.input", INPUT, {"values": {"name": "a", "age": True}}),
        ("interaction.input", INPUT, {"values": {"name": "a", "age": math.nan}}),
        ("interaction.input", INPUT, {"values": {"name": 5}}),
        ("interaction.input", INPUT, {"values": {"name": "a", "bio": "x" * (MAX_TEXTAREA + 1)}}),
        ("interaction.input", INPUT, {"values": [["name", "a"]]}),
        ("interaction.input", INPUT, "values"),
    ],
)  # fmt: skip
def test_a_bad_answer_is_refused_answer_invalid(
    tool: str, body: dict[str, Any], answer: Any
) -> None:
    assert _code(result_of, _request(tool, body), answer) is ErrorCode.ANSWER_INVALID


def test_an_input_result_takes_at_most_its_byte_bound() -> None:
    fields = [{"id": f"f{i}", "label": "F", "type": "textarea"} for i in range(12)]
    request = _request("interaction.input", {"title": "t", "prompt": "p", "fields": fields})
    answer = {"values": {f"f{i}": "x" * MAX_TEXTAREA for i in range(12)}}
    assert _code(result_of, request, answer) is ErrorCode.ANSWER_INVALID
    fine = {"values": {f"f{i}": "x" * 4000 for i in range(12)}}
    assert result_of(request, fine) == fine


def test_a_choice_result_is_deduplicated_in_the_requests_order() -> None:
    request = _request("interaction.choice", CHOICE | {"mode": "multi-choice"})
    assert result_of(request, {"action_ids": ["b", "a", "b"]}) == {"action_ids": ["a", "b"]}
    single = _request("interaction.choice", CHOICE)
    assert result_of(single, {"action_ids": ["b", "b"]}) == {"action_ids": ["b"]}


def test_a_cancel_is_recognised_and_is_no_result() -> None:
    assert is_cancel({"cancelled": True})
    others: list[object] = [{"cancelled": False}, {"cancelled": 1}, {"cancelled": True, "x": 1}, []]
    for other in (*others, None):
        assert not is_cancel(other)
    request = _request("interaction.input", INPUT)
    assert _code(result_of, request, {"cancelled": True}) is ErrorCode.ANSWER_INVALID


def test_a_notice_request_is_the_model_the_tool_input_describes() -> None:
    request = _request(
        "interaction.notice", {"title": "t", "message": "m", "acknowledge_label": "OK"}
    )
    assert request == NoticeRequest(title="t", message="m", acknowledge_label="OK")
    assert result_of(request, {"acknowledged": True}) == {"acknowledged": True}
