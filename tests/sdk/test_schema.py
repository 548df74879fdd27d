"""The JSON Schema subset: what it refuses (by reason), what `validate` says, what `schema_of`
derives, and the properties that hold for every schema and every value."""

from __future__ import annotations

import enum
import itertools
from types import GenericAlias
from typing import Annotated, Any, Literal

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from pydantic import BaseModel, ConfigDict, Field, create_model

from lineup.actors.kernel import ErrorCode
from lineup.sdk.schema import (
    MAX_DEPTH,
    MAX_PROPERTIES,
    MAX_VIOLATIONS,
    SchemaUnsupported,
    check_subset,
    schema_of,
    validate,
)


def obj(properties: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "object", "additionalProperties": False}
    if properties is not None:
        schema["properties"] = properties
    schema.update(extra)
    return schema


def refusal(schema: object) -> tuple[str, str]:
    with pytest.raises(SchemaUnsupported) as refused:
        check_subset(schema)
    assert refused.value.code is ErrorCode.INVALID_ARGUMENTS
    return refused.value.reason, refused.value.path


def nested(depth: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(depth - 1):
        schema = obj({"x": schema})
    return schema


# ------------------------------------------------------------------------------ check_subset


def test_the_seed_example_schema_is_inside_the_subset() -> None:
    check_subset({"type": "object", "additionalProperties": False})


def test_every_keyword_of_the_subset_is_accepted_together() -> None:
    check_subset(
        obj(
            {
                "name": {"type": "string", "minLength": 1, "maxLength": 10, "title": "Name"},
                "kind": {"type": "string", "enum": ["a", "b"], "default": "a"},
                "score": {"type": "number", "minimum": 0, "maximum": 1.5},
                "count": {"type": "integer", "minimum": -3, "maximum": 3, "enum": [1, 2]},
                "flag": {"type": "boolean", "description": "on or off"},
                "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 5},
                "inner": obj({"x": {"type": "integer"}}, required=["x"]),
            },
            required=["name", "flag"],
            description="everything at once",
        )
    )


@pytest.mark.parametrize(
    ("schema", "reason", "path"),
    [
        (obj({"a": {"$ref": "#/$defs/A"}}), "schema_keyword_unsupported", "/properties/a/$ref"),
        (
            obj({"a": {"type": "string", "pattern": "(a+)+$"}}),
            "schema_keyword_unsupported",
            "/properties/a/pattern",
        ),
        ({"type": "string", "format": "uri"}, "schema_keyword_unsupported", "/format"),
        ({"anyOf": [{"type": "string"}]}, "schema_keyword_unsupported", "/anyOf"),
        ({"oneOf": [{"type": "string"}]}, "schema_keyword_unsupported", "/oneOf"),
        ({"allOf": [{"type": "string"}]}, "schema_keyword_unsupported", "/allOf"),
        ({"type": "string", "x-handler": "run"}, "schema_keyword_unsupported", "/x-handler"),
        ({"type": "array", "items": {}, "minItems": 1}, "schema_keyword_unsupported", "/minItems"),
        ({"type": "string", "$id": "https://x"}, "schema_keyword_unsupported", "/$id"),
        ({"type": "object"}, "schema_additional_properties_required", "/additionalProperties"),
        (
            {"type": "object", "additionalProperties": True},
            "schema_additional_properties_required",
            "/additionalProperties",
        ),
        (
            {"type": "object", "additionalProperties": {"type": "string"}},
            "schema_additional_properties_required",
            "/additionalProperties",
        ),
        ({}, "schema_type_unsupported", "/type"),
        ({"type": "null"}, "schema_type_unsupported", "/type"),
        ({"type": ["string", "null"]}, "schema_type_unsupported", "/type"),
        ({"type": "number", "minLength": 1}, "schema_keyword_misplaced", "/minLength"),
        ({"type": "string", "properties": {}}, "schema_keyword_misplaced", "/properties"),
        (
            {"type": "array", "items": {"type": "string"}, "enum": [[]]},
            "schema_keyword_misplaced",
            "/enum",
        ),
        (True, "schema_malformed", ""),
        (obj({"a": "string"}), "schema_malformed", "/properties/a"),
        ({"type": "string", "enum": []}, "schema_value_invalid", "/enum"),
        ({"type": "string", "enum": ["a", 1]}, "schema_value_invalid", "/enum/1"),
        ({"type": "string", "enum": ["a", "a"]}, "schema_value_invalid", "/enum/1"),
        ({"type": "integer", "enum": [1, True]}, "schema_value_invalid", "/enum/1"),
        ({"type": "string", "minLength": -1}, "schema_value_invalid", "/minLength"),
        ({"type": "string", "minLength": 3, "maxLength": 2}, "schema_value_invalid", "/maxLength"),
        ({"type": "number", "minimum": float("nan")}, "schema_value_invalid", "/minimum"),
        ({"type": "number", "minimum": True}, "schema_value_invalid", "/minimum"),
        ({"type": "array"}, "schema_value_invalid", "/items"),
        (
            {"type": "array", "items": {"type": "string"}, "maxItems": 1.5},
            "schema_value_invalid",
            "/maxItems",
        ),
        (obj({"a": {"type": "string"}}, required=["b"]), "schema_value_invalid", "/required"),
        (obj({"a": {"type": "string"}}, required=["a", "a"]), "schema_value_invalid", "/required"),
        ({"type": "string", "description": 3}, "schema_value_invalid", "/description"),
        ({"type": "string", "default": float("inf")}, "schema_value_invalid", "/default"),
        (nested(MAX_DEPTH + 1), "schema_too_deep", "/properties/x" * MAX_DEPTH),
        (
            obj({f"p{i}": {"type": "string"} for i in range(MAX_PROPERTIES + 1)}),
            "schema_too_large",
            "/properties",
        ),
        (
            obj(
                {f"p{i}": obj({f"q{j}": {"type": "string"} for j in range(20)}) for i in range(205)}
            ),
            "schema_too_large",
            None,
        ),
    ],
)
def test_a_schema_outside_the_subset_is_refused_with_its_reason_and_path(
    schema: object, reason: str, path: str | None
) -> None:
    got_reason, got_path = refusal(schema)
    assert got_reason == reason
    if path is not None:
        assert got_path == path


def test_the_deepest_schema_allowed_is_accepted() -> None:
    check_subset(nested(MAX_DEPTH))


def test_a_property_name_with_a_slash_is_escaped_in_the_path() -> None:
    assert refusal(obj({"a/b~": {"type": "string", "pattern": "x"}})) == (
        "schema_keyword_unsupported",
        "/properties/a~1b~0/pattern",
    )


# ------------------------------------------------------------------------------ validate

PERSON = obj(
    {
        "name": {"type": "string", "minLength": 1, "maxLength": 3},
        "age": {"type": "integer", "minimum": 0, "maximum": 150},
        "score": {"type": "number"},
        "admin": {"type": "boolean"},
        "role": {"type": "string", "enum": ["a", "b"]},
        "tags": {"type": "array", "items": {"type": "string"}, "maxItems": 2},
        "a/b": obj({"c": {"type": "integer"}}, required=["c"]),
    },
    required=["name"],
)


def test_a_valid_value_has_no_violations() -> None:
    value = {"name": "Ann", "age": 30, "score": 1.5, "admin": False, "role": "a", "tags": ["x"]}
    assert validate(PERSON, value) == []


@pytest.mark.parametrize(
    ("value", "violations"),
    [
        ({}, ["/name"]),
        ({"name": "Ann", "extra": 1}, ["/extra"]),
        ({"name": ""}, ["/name"]),
        ({"name": "Anna"}, ["/name"]),
        ({"name": "日本語"}, []),  # lengths are code points, not bytes
        ({"name": "A", "age": -1}, ["/age"]),
        ({"name": "A", "age": 1.5}, ["/age"]),
        ({"name": "A", "age": 2.0}, []),  # JSON has one number type: 2.0 is an integer
        ({"name": "A", "age": True}, ["/age"]),
        ({"name": "A", "score": True}, ["/score"]),
        ({"name": "A", "score": float("nan")}, ["/score"]),
        ({"name": "A", "score": float("inf")}, ["/score"]),
        ({"name": "A", "admin": 0}, ["/admin"]),
        ({"name": "A", "role": "c"}, ["/role"]),
        ({"name": "A", "tags": ["x", 1]}, ["/tags/1"]),
        ({"name": "A", "tags": ["x", "y", "z"]}, ["/tags"]),
        ({"name": "A", "a/b": {}}, ["/a~1b/c"]),
        ({"name": "A", "a/b": {"c": "1"}}, ["/a~1b/c"]),
        ({1: "x", "name": "A"}, [""]),
        ([], [""]),
        (None, [""]),
    ],
)
def test_each_violation_is_reported_at_its_json_pointer(value: Any, violations: list[str]) -> None:
    assert validate(PERSON, value) == violations


def test_an_enum_compares_as_json_so_true_is_not_one() -> None:
    assert validate({"type": "integer", "enum": [1]}, True) == [""]
    assert validate({"type": "integer", "enum": [1]}, 1.0) == []
    assert validate({"type": "boolean", "enum": [True]}, 1) == [""]


def test_validate_refuses_a_schema_outside_the_subset() -> None:
    with pytest.raises(SchemaUnsupported) as refused:
        validate({"type": "string", "pattern": "a"}, "a")
    assert refused.value.reason == "schema_keyword_unsupported"


def test_validate_stops_collecting_after_the_cap() -> None:
    schema = {"type": "array", "items": {"type": "string"}}
    assert len(validate(schema, list(range(10 * MAX_VIOLATIONS)))) == MAX_VIOLATIONS


# ------------------------------------------------------------------------------ schema_of


class Colour(enum.Enum):
    RED = "red"
    BLUE = "blue"


class Level(enum.IntEnum):
    LOW = 1
    HIGH = 2


class Inner(BaseModel):
    model_config = ConfigDict(extra="forbid")

    x: int = Field(ge=0, le=9)


class Everything(BaseModel):
    """A model using every expressible building block."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(min_length=1, max_length=5, description="who")
    maybe: str | None = None
    one: Literal["x"]
    two: Literal["x", "y"] = "x"
    nullable_literal: Literal["a", None] = None
    colour: Colour
    level: Level = Level.LOW
    inner: Inner
    maybe_inner: Inner | None = None
    inners: tuple[Inner, ...] = ()
    numbers: Annotated[list[float], Field(max_length=3)] = []
    flag: bool = False


def test_a_model_becomes_a_closed_schema_without_titles_refs_or_nulls() -> None:
    inner = {
        "type": "object",
        "additionalProperties": False,
        "properties": {"x": {"type": "integer", "minimum": 0, "maximum": 9}},
        "required": ["x"],
    }
    assert schema_of(Everything) == {
        "type": "object",
        "additionalProperties": False,
        "description": "A model using every expressible building block.",
        "properties": {
            "name": {"type": "string", "minLength": 1, "maxLength": 5, "description": "who"},
            "maybe": {"type": "string"},
            "one": {"type": "string", "enum": ["x"]},
            "two": {"type": "string", "enum": ["x", "y"], "default": "x"},
            "nullable_literal": {"type": "string", "enum": ["a"]},
            "colour": {"type": "string", "enum": ["red", "blue"]},
            "level": {"type": "integer", "enum": [1, 2], "default": 1},
            "inner": inner,
            "maybe_inner": inner,
            "inners": {"type": "array", "items": inner, "default": []},
            "numbers": {"type": "array", "items": {"type": "number"}, "maxItems": 3, "default": []},
            "flag": {"type": "boolean", "default": False},
        },
        "required": ["name", "one", "colour", "inner"],
    }


class Open(BaseModel):
    x: int


class Allows(BaseModel):
    model_config = ConfigDict(extra="allow")


class HasOpenChild(BaseModel):
    model_config = ConfigDict(extra="forbid")

    child: Open


class Tree(BaseModel):
    model_config = ConfigDict(extra="forbid")

    children: list[Tree] = []


def _forbid(**fields: Any) -> type[BaseModel]:
    model: type[BaseModel] = create_model("Dyn", __config__=ConfigDict(extra="forbid"), **fields)
    return model


@pytest.mark.parametrize(
    ("model", "reason"),
    [
        (Open, "model_extra_not_forbidden"),
        (Allows, "model_extra_not_forbidden"),
        (HasOpenChild, "model_extra_not_forbidden"),
        (Tree, "schema_recursive"),
        (_forbid(x=(int | None, ...)), "schema_null_unsupported"),
        (_forbid(x=(list[int | None], [])), "schema_null_unsupported"),
        (_forbid(x=(str, Field(pattern="a+"))), "schema_keyword_unsupported"),
        (_forbid(x=(int, Field(gt=0))), "schema_keyword_unsupported"),
        (_forbid(x=(list[int], Field(min_length=1))), "schema_keyword_unsupported"),
        (_forbid(x=(set[int], ...)), "schema_keyword_unsupported"),
        (_forbid(x=(int | str, ...)), "schema_keyword_unsupported"),
        (_forbid(x=(tuple[int, str], ...)), "schema_keyword_unsupported"),
        (_forbid(x=(dict[str, int], ...)), "schema_additional_properties_required"),
        (_forbid(x=(Any, ...)), "schema_type_unsupported"),
        (_forbid(x=(Literal["a", 1], ...)), "schema_type_unsupported"),
        (_forbid(x=(type, ...)), "schema_model_unsupported"),
        (int, "schema_model_unsupported"),
    ],
)
def test_a_model_the_subset_cannot_express_is_refused_with_its_reason(
    model: Any, reason: str
) -> None:
    with pytest.raises(SchemaUnsupported) as refused:
        schema_of(model)
    assert refused.value.reason == reason


# ------------------------------------------------------------------------------ properties

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=True, allow_infinity=True)
    | st.text(max_size=8),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=4), children, max_size=4)
    ),
    max_leaves=20,
)

names = st.text(alphabet="abc/~_", min_size=1, max_size=4)


def _scalar_schemas() -> st.SearchStrategy[dict[str, Any]]:
    bounds = st.one_of(st.none(), st.integers(-50, 50))

    def string(low: int | None, high: int | None, values: list[str] | None) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": "string"}
        if values:  # an enum without lengths: its values need not respect them
            schema["enum"] = values
            return schema
        if low is not None:
            schema["minLength"] = abs(low) % 5
        if high is not None:
            schema["maxLength"] = schema.get("minLength", 0) + abs(high) % 5
        return schema

    def number(kind: str, low: int | None, high: int | None) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": kind}
        if low is not None:
            schema["minimum"] = low
        if high is not None:
            schema["maximum"] = max(high, low if low is not None else high)
        return schema

    return st.one_of(
        st.builds(
            string,
            bounds,
            bounds,
            st.none() | st.lists(st.text(max_size=3), min_size=1, max_size=3, unique=True),
        ),
        st.builds(number, st.sampled_from(["integer", "number"]), bounds, bounds),
        st.just({"type": "boolean"}),
        st.just({"type": "boolean", "enum": [True]}),
    )


def _composite(children: st.SearchStrategy[dict[str, Any]]) -> st.SearchStrategy[dict[str, Any]]:
    @st.composite
    def an_object(draw: st.DrawFn) -> dict[str, Any]:
        properties = draw(st.dictionaries(names, children, max_size=4))
        required = [n for n in properties if draw(st.booleans())]
        return obj(properties, required=required)

    @st.composite
    def an_array(draw: st.DrawFn) -> dict[str, Any]:
        schema: dict[str, Any] = {"type": "array", "items": draw(children)}
        if draw(st.booleans()):
            schema["maxItems"] = draw(st.integers(0, 4))
        return schema

    return an_object() | an_array()


subset_schemas = st.recursive(_scalar_schemas(), _composite, max_leaves=12)


@st.composite
def values_for(draw: st.DrawFn, schema: dict[str, Any]) -> Any:
    """A value that satisfies `schema` (a subset schema)."""
    kind = schema["type"]
    if "enum" in schema:
        return draw(st.sampled_from(schema["enum"]))
    if kind == "object":
        properties = schema.get("properties", {})
        required = set(schema.get("required", ()))
        return draw(
            st.fixed_dictionaries(
                {n: values_for(s) for n, s in properties.items() if n in required},
                optional={n: values_for(s) for n, s in properties.items() if n not in required},
            )
        )
    if kind == "array":
        return draw(
            st.lists(values_for(schema["items"]), max_size=min(schema.get("maxItems", 3), 3))
        )
    if kind == "string":
        low = schema.get("minLength", 0)
        return draw(st.text(min_size=low, max_size=min(schema.get("maxLength", low + 5), low + 5)))
    if kind == "integer":
        return draw(st.integers(schema.get("minimum"), schema.get("maximum")))
    if kind == "number":
        return draw(
            st.floats(
                schema.get("minimum"), schema.get("maximum"), allow_nan=False, allow_infinity=False
            )
        )
    return draw(st.booleans())


@given(subset_schemas, json_values)
def test_validate_never_raises_for_any_json_value(schema: dict[str, Any], value: Any) -> None:
    check_subset(schema)
    violations = validate(schema, value)
    assert all(v == "" or v.startswith("/") for v in violations)


@given(subset_schemas.flatmap(lambda s: st.tuples(st.just(s), values_for(s))))
def test_a_value_built_from_a_schema_has_no_violations(pair: tuple[dict[str, Any], Any]) -> None:
    schema, value = pair
    assert validate(schema, value) == []


def _field_types() -> st.SearchStrategy[Any]:
    base = st.one_of(
        st.sampled_from([int, float, bool, str, Colour, Level]),
        st.builds(
            lambda low, size: Annotated[str, Field(min_length=low, max_length=low + size)],
            st.integers(0, 3),
            st.integers(0, 5),
        ),
        st.builds(
            lambda low, size: Annotated[int, Field(ge=low, le=low + size)],
            st.integers(-5, 5),
            st.integers(0, 10),
        ),
        st.lists(st.text(max_size=3), min_size=1, max_size=3, unique=True).map(
            lambda values: Literal[tuple(values)]
        ),
    )

    # `GenericAlias(list, (t,))` is `list[t]`, spelled so for a `t` drawn at run time (which
    # a type checker cannot read in a type expression).
    def extend(children: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
        return st.one_of(
            children.map(lambda t: GenericAlias(list, (t,))),
            children.map(lambda t: GenericAlias(tuple, (t, ...))),
            st.builds(
                lambda t, n: Annotated[GenericAlias(list, (t,)), Field(max_length=n)],
                children,
                st.integers(0, 3),
            ),
            st.dictionaries(
                st.sampled_from(["a", "b", "c"]), st.tuples(children, st.booleans()), max_size=3
            ).map(_model_of),
        )

    return st.recursive(base, extend, max_leaves=6)


_model_numbers = itertools.count(1)


def _model_of(fields: dict[str, tuple[Any, bool]]) -> type[BaseModel]:
    # `create_model`'s field definitions, (type, default) each, for its `**field_definitions`.
    definitions: dict[str, Any] = {
        name: (kind | None, None) if optional else (kind, ...)
        for name, (kind, optional) in fields.items()
    }
    model: type[BaseModel] = create_model(
        f"Generated{next(_model_numbers)}", __config__=ConfigDict(extra="forbid"), **definitions
    )
    return model


@settings(max_examples=60, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.dictionaries(
        st.sampled_from(["p", "q", "r"]), st.tuples(_field_types(), st.booleans()), max_size=3
    ).map(_model_of),
    st.data(),
)
def test_every_schema_of_a_model_is_in_the_subset_and_agrees_with_the_model(
    model: type[BaseModel], data: st.DataObject
) -> None:
    schema = schema_of(model)
    check_subset(schema)
    value = data.draw(values_for(schema))
    parsed = model.model_validate(value)  # what the schema admits, the model accepts
    dumped = parsed.model_dump(mode="json", exclude_none=True)
    assert validate(schema, dumped) == []  # and what the model produces, the schema admits


def test_a_tool_descriptors_schemas_are_checked_once_when_it_is_made_not_on_each_call(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from lineup.sdk import schema as schema_module
    from lineup.sdk.manifest import ToolDescriptor

    obj = {
        "type": "object",
        "properties": {"text": {"type": "string", "maxLength": 3}},
        "required": ["text"],
        "additionalProperties": False,
    }
    descriptor = ToolDescriptor(
        method="probe.echo", handling="direct", input_schema=obj, output_schema=obj
    )

    def no_second_check(schema: object) -> None:
        raise AssertionError("the schema was checked again")

    monkeypatch.setattr(schema_module, "check_subset", no_second_check)
    assert descriptor.input_violations({"text": "abcd"}) == ["/text"]
    assert descriptor.output_violations({"text": "ab"}) == []
    with pytest.raises(AssertionError):  # a schema of unknown provenance still is
        schema_module.validate(obj, {"text": "ab"})
