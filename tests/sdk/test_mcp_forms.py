"""An MCP form as a standard interaction (`sdk/_mcp_forms.py`): which interaction asks which
form, the request it asks is one the runtime takes, and the answer maps back to the form's
content, checked against the form's schema."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lineup.actors.kernel import ErrorCode
from lineup.sdk import interactions as std
from lineup.sdk._mcp_forms import FormUnsupported, ask_of, content_of


def _form(props: dict[str, Any], required: list[str] | None = None) -> dict[str, Any]:
    return {"type": "object", "properties": props, "required": required or []}


def _checked(request: dict[str, Any]) -> None:
    """The runtime takes the request as the app asks it (`_app_questions._ask_app`)."""
    kind = request["kind"]
    std.request_of(f"interaction.{kind}", {k: v for k, v in request.items() if k != "kind"})


def test_an_empty_form_is_a_confirm_accepted_empty_or_declined() -> None:
    ask = ask_of("app", "Go on?", _form({}))
    _checked(ask.request)
    assert ask.request["kind"] == "confirm"
    assert content_of(ask, {"approved": True}) == {}
    assert content_of(ask, {"approved": False}) is None  # decline


def test_one_boolean_is_a_yes_no_confirm_whose_no_is_an_answer() -> None:
    ask = ask_of("app", "Agree?", _form({"ok": {"type": "boolean"}}, ["ok"]))
    _checked(ask.request)
    assert (ask.request["approve_label"], ask.request["cancel_label"]) == ("Yes", "No")
    assert content_of(ask, {"approved": False}) == {"ok": False}


@pytest.mark.parametrize(
    "spec",
    [
        {"type": "string", "enum": ["a b", "c"], "enumNames": ["A", "C"]},
        {"type": "string", "oneOf": [{"const": "a b", "title": "A"}, {"const": "c"}]},
    ],
)
def test_one_enum_is_a_single_choice_answered_by_the_enum_value(spec: dict[str, Any]) -> None:
    ask = ask_of("app", "Which?", _form({"pick": spec}, ["pick"]))
    _checked(ask.request)
    assert ask.request["mode"] == "single-choice"
    assert ask.request["actions"][0]["label"] == "A"
    assert content_of(ask, {"action_ids": ["o0"]}) == {"pick": "a b"}


def test_one_multi_select_is_a_multi_choice_checked_against_max_items() -> None:
    spec = {"type": "array", "maxItems": 1, "items": {"type": "string", "enum": ["x", "y"]}}
    ask = ask_of("app", "Which?", _form({"many": spec}))
    _checked(ask.request)
    assert ask.request["mode"] == "multi-choice"
    assert content_of(ask, {"action_ids": ["o1"]}) == {"many": ["y"]}
    with pytest.raises(FormUnsupported) as refused:
        content_of(ask, {"action_ids": ["o0", "o1"]})
    assert refused.value.code is ErrorCode.ANSWER_INVALID


def test_a_form_is_an_input_without_its_optional_booleans_and_enums() -> None:
    form = _form(
        {
            "name": {"type": "string", "title": "Name", "maxLength": 10, "default": "Ada"},
            "n": {"type": "integer", "minimum": 1, "maximum": 5},
            "story": {"type": "string", "maxLength": 10_000},
            "ok": {"type": "boolean"},
            "pick": {"type": "string", "enum": ["a"]},
        },
        ["name"],
    )
    ask = ask_of("app", "Tell", form)
    _checked(ask.request)
    fields = ask.request["fields"]
    assert [(f["id"], f["type"], f["required"]) for f in fields] == [
        ("f0", "text", True),
        ("f1", "number", False),
        ("f2", "textarea", False),
    ]
    assert fields[0]["placeholder"] == "Ada" and fields[1]["maximum"] == 5.0
    assert content_of(ask, {"values": {"f0": "Bo", "f1": 3.0}}) == {"name": "Bo", "n": 3}
    with pytest.raises(FormUnsupported) as refused:
        content_of(ask, {"values": {"f0": "Bo", "f1": 2.5}})  # not an integer
    assert refused.value.code is ErrorCode.ANSWER_INVALID


@pytest.mark.parametrize(
    "form",
    [
        _form({"a": {"type": "string"}, "ok": {"type": "boolean"}}, ["ok"]),
        _form({"a": {"type": "string"}, "o": {"type": "object"}}, ["o"]),
        _form({f"p{i}": {"type": "string"} for i in range(13)}),
        _form({"ok": {"type": "boolean"}, "pick": {"type": "string", "enum": ["a"]}}),
        {"type": "array"},
    ],
    ids=["required-boolean", "nested", "too-many", "nothing-showable", "not-an-object"],
)
def test_a_form_no_interaction_can_ask_is_refused_with_its_code(form: dict[str, Any]) -> None:
    with pytest.raises(FormUnsupported) as refused:
        ask_of("app", "?", form)
    assert refused.value.code is ErrorCode.MCP_ELICITATION_UNSUPPORTED


_PROP = st.fixed_dictionaries(
    {"type": st.sampled_from(["string", "number", "integer", "boolean", "array", "object"])},
    optional={
        "title": st.text(max_size=300),
        "minLength": st.integers(-5, 20_000),
        "maxLength": st.integers(-5, 20_000),
        "minimum": st.floats(allow_nan=True) | st.integers(),
        "maximum": st.floats(allow_nan=True) | st.integers(),
        "enum": st.lists(st.text(max_size=90) | st.just(" "), max_size=25),
        "default": st.text(max_size=300) | st.booleans() | st.none(),
    },
)


@given(
    props=st.dictionaries(st.text(min_size=1, max_size=70), _PROP, max_size=14)
    | st.dictionaries(st.text(min_size=1, max_size=70), _PROP, max_size=1),
    message=st.text(max_size=9000),
    title=st.text(max_size=300),
)
def test_any_form_is_asked_as_a_request_the_runtime_takes_or_refused_with_its_code(
    props: dict[str, Any], message: str, title: str
) -> None:
    try:
        ask = ask_of(title, message, _form(props, list(props)[:1]))
    except FormUnsupported as refused:
        code = refused.code
    else:
        _checked(ask.request)
        return
    assert code is ErrorCode.MCP_ELICITATION_UNSUPPORTED
