"""The JSON Schema subset of tool contracts (seed 003 §4.2): check it, validate by it, derive it.

Theory of operation
-------------------
A tool's `input_schema` and `output_schema` travel in a non-executable manifest and are enforced
by the runtime on every call, so they may use only what can be implemented and tested exactly:

    type          object | string | number | integer | boolean | array (one string, always present)
    object        properties, required, additionalProperties (present, and always false)
    string        minLength, maxLength (counted in code points)
    number        minimum, maximum (inclusive; integer accepts integral floats such as 1.0)
    array         items (always present), maxItems
    scalars       enum (non-empty, values of the schema's type)
    anywhere      description, title, default (documentation only, never applied)

`check_subset` refuses everything else with a stable `reason`: no `$ref` (so no recursion and no
URL is ever loaded), no `pattern` or `format` (no regex ever runs), no `anyOf`/`oneOf`/`allOf`,
no open objects, nothing unknown. It also bounds the schema (depth, nodes, properties, enum
values) so checking and validating a hostile manifest costs little.

`validate` is hand-written rather than jsonschema's `Draft202012Validator`: for this subset it is
about a hundred lines, every keyword's meaning is spelled out here and tested, it returns the
JSON-pointer path of each violation (what the runtime reports), and it works the same whether or
not jsonschema's defaults change (format assertion, `$ref` resolution, dialect detection). It
walks the value only as deep as the (bounded) schema, so no input can make it recurse far.

`schema_of` turns a pydantic model's JSON schema into this form (see its docstring).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, Final

from pydantic import BaseModel
from pydantic.errors import PydanticInvalidForJsonSchema, PydanticUserError

from lineup.actors.kernel import ErrorCode, LineUpError

__all__ = [
    "MAX_DEPTH",
    "MAX_ENUM",
    "MAX_NODES",
    "MAX_PROPERTIES",
    "InputInvalid",
    "SchemaUnsupported",
    "check_subset",
    "pointer_of",
    "schema_of",
    "validate",
]

MAX_DEPTH: Final = 16  # nested schemas, the root included
MAX_PROPERTIES: Final = 256  # per object
MAX_NODES: Final = 4096  # schemas in one document
MAX_ENUM: Final = 256
MAX_NAME: Final = 200  # characters in a property name
MAX_DEFAULT_DEPTH: Final = 32
MAX_VIOLATIONS: Final = 64  # validate stops collecting after this many

TYPES: Final = frozenset({"object", "string", "number", "integer", "boolean", "array"})
_COMMON: Final = frozenset({"type", "description", "title", "default"})
_BY_TYPE: Final[Mapping[str, frozenset[str]]] = {
    "object": frozenset({"properties", "required", "additionalProperties"}),
    "string": frozenset({"minLength", "maxLength", "enum"}),
    "number": frozenset({"minimum", "maximum", "enum"}),
    "integer": frozenset({"minimum", "maximum", "enum"}),
    "boolean": frozenset({"enum"}),
    "array": frozenset({"items", "maxItems"}),
}
_KNOWN: Final = _COMMON.union(*_BY_TYPE.values())


class SchemaUnsupported(LineUpError):
    """A schema outside the subset. `reason` is stable; `path` is a JSON pointer into the schema.

    Reasons: schema_malformed, schema_keyword_unsupported, schema_keyword_misplaced,
    schema_type_unsupported, schema_value_invalid, schema_additional_properties_required,
    schema_too_deep, schema_too_large; and from `schema_of`: schema_recursive,
    schema_null_unsupported, model_extra_not_forbidden, schema_model_unsupported.
    """

    default_code = ErrorCode.INVALID_ARGUMENTS

    def __init__(self, reason: str, path: str = "") -> None:
        self.reason = reason
        self.path = path
        super().__init__(ErrorCode.INVALID_ARGUMENTS, f"{reason} at {path or '/'}")


class InputInvalid(LineUpError):
    """A tool input that breaks its tool's schema (`tool_input_invalid`). `pointer` is the
    JSON pointer of the first offending field (`""`: the input as a whole): a path, never a
    value, so the refusal may carry it to the Agent (and nothing writes it into a log)."""

    default_code = ErrorCode.TOOL_INPUT_INVALID

    def __init__(self, pointer: str, message: str = "") -> None:
        self.pointer = pointer
        super().__init__(ErrorCode.TOOL_INPUT_INVALID, message)


def _pointer(path: str, token: str | int) -> str:
    return f"{path}/{str(token).replace('~', '~0').replace('/', '~1')}"


def pointer_of(tokens: Sequence[str | int]) -> str:
    """The RFC 6901 pointer of a location given as its tokens (`()` is `""`, the root)."""
    path = ""
    for token in tokens:
        path = _pointer(path, token)
    return path


def _is_number(value: object) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    return isinstance(value, float) and math.isfinite(value)


def _is_integer(value: object) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, int):
        return True
    return isinstance(value, float) and math.isfinite(value) and value.is_integer()


def _is_count(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def _has_type(kind: str, value: object) -> bool:
    if kind == "object":
        return isinstance(value, dict) and all(isinstance(k, str) for k in value)
    if kind == "array":
        return isinstance(value, list | tuple)
    if kind == "string":
        return isinstance(value, str)
    if kind == "number":
        return _is_number(value)
    if kind == "integer":
        return _is_integer(value)
    return isinstance(value, bool)  # "boolean"; check_subset allows no other kind


def _same(a: object, b: object) -> bool:
    """JSON equality of two scalars: `true` is not `1`, `1.0` is `1`."""
    return isinstance(a, bool) == isinstance(b, bool) and a == b


def _is_json(value: object, depth: int = 0) -> bool:
    if depth > MAX_DEFAULT_DEPTH:
        return False
    if value is None or isinstance(value, str | bool | int):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, list | tuple):
        return all(_is_json(v, depth + 1) for v in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _is_json(v, depth + 1) for k, v in value.items())
    return False


# --------------------------------------------------------------------------------- check


def check_subset(schema: object) -> None:
    """Raise `SchemaUnsupported` unless `schema` is inside the subset. Never runs a regex,
    never resolves a reference, never loads anything."""
    _Checker().check(schema, "", 1)


class _Checker:
    def __init__(self) -> None:
        self.nodes = 0

    def check(self, schema: object, path: str, depth: int) -> None:
        if depth > MAX_DEPTH:
            raise SchemaUnsupported("schema_too_deep", path)
        self.nodes += 1
        if self.nodes > MAX_NODES:
            raise SchemaUnsupported("schema_too_large", path)
        if not isinstance(schema, dict) or not all(isinstance(k, str) for k in schema):
            raise SchemaUnsupported("schema_malformed", path)
        for key in schema:
            if key not in _KNOWN:
                raise SchemaUnsupported("schema_keyword_unsupported", _pointer(path, key))
        kind = schema.get("type")
        if not isinstance(kind, str) or kind not in TYPES:
            raise SchemaUnsupported("schema_type_unsupported", _pointer(path, "type"))
        allowed = _COMMON | _BY_TYPE[kind]
        for key in schema:
            if key not in allowed:
                raise SchemaUnsupported("schema_keyword_misplaced", _pointer(path, key))
        for key in ("title", "description"):
            if key in schema and not isinstance(schema[key], str):
                raise SchemaUnsupported("schema_value_invalid", _pointer(path, key))
        if "default" in schema and not _is_json(schema["default"]):
            raise SchemaUnsupported("schema_value_invalid", _pointer(path, "default"))
        if kind == "object":
            self._object(schema, path, depth)
        elif kind == "array":
            self._array(schema, path, depth)
        else:
            self._scalar(schema, kind, path)

    def _object(self, schema: dict[str, Any], path: str, depth: int) -> None:
        if schema.get("additionalProperties", True) is not False:
            raise SchemaUnsupported(
                "schema_additional_properties_required", _pointer(path, "additionalProperties")
            )
        properties = schema.get("properties", {})
        here = _pointer(path, "properties")
        if not isinstance(properties, dict):
            raise SchemaUnsupported("schema_value_invalid", here)
        if len(properties) > MAX_PROPERTIES:
            raise SchemaUnsupported("schema_too_large", here)
        for name, sub in properties.items():
            if not isinstance(name, str) or len(name) > MAX_NAME:
                raise SchemaUnsupported("schema_value_invalid", here)
            self.check(sub, _pointer(here, name), depth + 1)
        required = schema.get("required", [])
        here = _pointer(path, "required")
        if (
            not isinstance(required, list)
            or not all(isinstance(n, str) and n in properties for n in required)
            or len(set(required)) != len(required)
        ):
            raise SchemaUnsupported("schema_value_invalid", here)

    def _array(self, schema: dict[str, Any], path: str, depth: int) -> None:
        if "items" not in schema:
            raise SchemaUnsupported("schema_value_invalid", _pointer(path, "items"))
        self.check(schema["items"], _pointer(path, "items"), depth + 1)
        if "maxItems" in schema and not _is_count(schema["maxItems"]):
            raise SchemaUnsupported("schema_value_invalid", _pointer(path, "maxItems"))

    def _scalar(self, schema: dict[str, Any], kind: str, path: str) -> None:
        for key in ("minLength", "maxLength"):
            if key in schema and not _is_count(schema[key]):
                raise SchemaUnsupported("schema_value_invalid", _pointer(path, key))
        for key in ("minimum", "maximum"):
            if key in schema and not _is_number(schema[key]):
                raise SchemaUnsupported("schema_value_invalid", _pointer(path, key))
        for low, high in (("minLength", "maxLength"), ("minimum", "maximum")):
            if low in schema and high in schema and schema[low] > schema[high]:
                raise SchemaUnsupported("schema_value_invalid", _pointer(path, high))
        if "enum" in schema:
            values = schema["enum"]
            here = _pointer(path, "enum")
            if not isinstance(values, list) or not values:
                raise SchemaUnsupported("schema_value_invalid", here)
            if len(values) > MAX_ENUM:
                raise SchemaUnsupported("schema_too_large", here)
            for i, value in enumerate(values):
                if not _has_type(kind, value) or any(_same(value, v) for v in values[:i]):
                    raise SchemaUnsupported("schema_value_invalid", _pointer(here, i))


# --------------------------------------------------------------------------------- validate


def validate(schema: Mapping[str, Any], value: object, *, checked: bool = False) -> list[str]:
    """The JSON-pointer paths where `value` breaks `schema` (empty: valid). A missing required
    property and an unexpected one are reported at the property's own path.

    Raises `SchemaUnsupported` if the schema is outside the subset; never raises for a value,
    whatever it is (values that are not JSON are simply violations). `checked`: the schema is
    known to be inside the subset (a `ToolDescriptor`'s, checked when it was made), so it is
    not checked again (the check cost twice what the validation does, on every tool call).
    """
    if not checked:
        check_subset(schema)
    found: list[str] = []
    _validate(schema, value, "", found)
    return found


def _validate(schema: Mapping[str, Any], value: object, path: str, found: list[str]) -> None:
    if len(found) >= MAX_VIOLATIONS:
        return
    kind = schema["type"]
    if not _has_type(kind, value):
        found.append(path)
        return
    if kind == "object":
        assert isinstance(value, dict)
        properties: Mapping[str, Any] = schema.get("properties", {})
        for name in schema.get("required", ()):
            if name not in value:
                found.append(_pointer(path, name))
        for name, item in value.items():
            sub = properties.get(name)
            if sub is None:
                found.append(_pointer(path, name))
            else:
                _validate(sub, item, _pointer(path, name), found)
            if len(found) >= MAX_VIOLATIONS:
                return
    elif kind == "array":
        assert isinstance(value, Sequence)
        if len(value) > schema.get("maxItems", len(value)):
            found.append(path)
            return
        for i, item in enumerate(value):
            _validate(schema["items"], item, _pointer(path, i), found)
            if len(found) >= MAX_VIOLATIONS:
                return
    elif not _scalar_ok(schema, kind, value):
        found.append(path)


def _scalar_ok(schema: Mapping[str, Any], kind: str, value: Any) -> bool:
    if "enum" in schema and not any(_same(value, v) for v in schema["enum"]):
        return False
    if kind == "string":
        size = len(value)
        return bool(schema.get("minLength", 0) <= size <= schema.get("maxLength", size))
    if kind in ("number", "integer"):
        return bool(schema.get("minimum", value) <= value <= schema.get("maximum", value))
    return True


# --------------------------------------------------------------------------------- derive


def schema_of(model: type[BaseModel]) -> dict[str, Any]:
    """The subset schema of a pydantic model, checked by `check_subset`.

    Inlines `$defs`/`$ref` (refusing recursion), turns `X | None` into `X` on a property that is
    not required (the field must have a default; `None` values are omitted on output), `Literal`
    and `Enum` into `enum`, and drops `title`s. Every model must use `extra="forbid"`. Raises
    `SchemaUnsupported` for what the subset cannot express (unions, patterns, formats, open
    dicts, sets, `gt`/`lt`, `min_length` on lists, ...).
    """
    if not (isinstance(model, type) and issubclass(model, BaseModel)):
        raise SchemaUnsupported("schema_model_unsupported")
    try:
        raw = model.model_json_schema(mode="validation")
    except (PydanticInvalidForJsonSchema, PydanticUserError) as exc:
        raise SchemaUnsupported("schema_model_unsupported") from exc
    defs = raw.pop("$defs", {})
    schema, nullable = _Deriver(defs).convert(raw, "", ())
    if nullable:
        raise SchemaUnsupported("schema_null_unsupported")
    check_subset(schema)
    return schema


class _Deriver:
    def __init__(self, defs: Mapping[str, Any]) -> None:
        self.defs = defs

    def convert(
        self, node: Mapping[str, Any], path: str, resolving: tuple[str, ...]
    ) -> tuple[dict[str, Any], bool]:
        """The subset form of one node, and whether the node also allowed `null`."""
        if len(resolving) > MAX_DEPTH:
            raise SchemaUnsupported("schema_too_deep", path)
        node = dict(node)
        if "$ref" in node:
            ref = node.pop("$ref")
            name = ref.removeprefix("#/$defs/") if isinstance(ref, str) else ""
            if name in resolving:
                raise SchemaUnsupported("schema_recursive", path)
            if name not in self.defs:
                raise SchemaUnsupported("schema_keyword_unsupported", _pointer(path, "$ref"))
            # Keywords beside a $ref (a field's description) win over the referenced ones.
            return self.convert({**self.defs[name], **node}, path, (*resolving, name))
        nullable = False
        if "anyOf" in node:
            branches = node.pop("anyOf")
            others = [b for b in branches if b != {"type": "null"}]
            if len(others) != 1 or len(others) == len(branches):
                raise SchemaUnsupported("schema_keyword_unsupported", _pointer(path, "anyOf"))
            inner, _ = self.convert(others[0], path, resolving)
            node = {**inner, **node}
            nullable = True
        if "const" in node:
            node["enum"] = [node.pop("const")]
        if isinstance(node.get("enum"), list) and None in node["enum"]:
            node["enum"] = [v for v in node["enum"] if v is not None]
            nullable = True
        if isinstance(node.get("type"), list) and "null" in node["type"]:
            kinds = [k for k in node["type"] if k != "null"]
            node["type"] = kinds[0] if len(kinds) == 1 else kinds
            nullable = True
        if "type" not in node and isinstance(node.get("enum"), list):
            node["type"] = _enum_type(node["enum"], path)
        if nullable and node.get("default", 0) is None:
            del node["default"]
        node.pop("title", None)
        if node.get("type") == "object":
            self._object(node, path, resolving)
        if "items" in node and isinstance(node["items"], Mapping):
            items, item_nullable = self.convert(node["items"], _pointer(path, "items"), resolving)
            if item_nullable:
                raise SchemaUnsupported("schema_null_unsupported", _pointer(path, "items"))
            node["items"] = items
        return node, nullable

    def _object(self, node: dict[str, Any], path: str, resolving: tuple[str, ...]) -> None:
        extra = node.get("additionalProperties")
        if extra is not False:
            reason = (
                "model_extra_not_forbidden"
                if "properties" in node and not isinstance(extra, Mapping)
                else "schema_additional_properties_required"
            )
            raise SchemaUnsupported(reason, _pointer(path, "additionalProperties"))
        required = node.get("required", [])
        properties: dict[str, Any] = {}
        for name, sub in node.get("properties", {}).items():
            here = _pointer(_pointer(path, "properties"), name)
            properties[name], nullable = self.convert(sub, here, resolving)
            if nullable and name in required:
                raise SchemaUnsupported("schema_null_unsupported", here)
        if "properties" in node:
            node["properties"] = properties


def _enum_type(values: list[Any], path: str) -> str:
    for kind in ("boolean", "integer", "number", "string"):
        if values and all(_has_type(kind, v) for v in values):
            return kind
    raise SchemaUnsupported("schema_type_unsupported", _pointer(path, "enum"))
