"""The JSON Schemas of an MCP server's tools: checked and enforced as declared. No I/O.

Theory of operation
-------------------
A LineUp app's tool contracts use the small subset `lineup.sdk.schema` implements by hand. An
MCP server's may use all of JSON Schema 2020-12, so a tool whose descriptor says
`delivery: "mcp"` is checked and validated by the `jsonschema` library instead (for that app
kind only), with three bounds the library does not set by itself:

    remote `$ref`     never loaded: the registry's `retrieve` refuses every URI, so a schema
                      resolves only within itself (`#/$defs/...`, `$anchor`, `$dynamicRef`)
    regular expressions  `pattern` and `patternProperties` run on the `regex` engine with a
                      time limit (`PATTERN_TIMEOUT`), not on `re`, which cannot be interrupted:
                      a catastrophic pattern fails the value, it never stalls the runtime
    size              a schema is at most `MAX_SCHEMA_BYTES` of JSON

`check_schema` refuses (`SchemaUnsupported`) a schema that is not valid 2020-12, whose root is
not an object schema, or that is too large, with the keyword and the JSON pointer of the fault.
`violations` gives the JSON pointers of what a value breaks, as `schema.validate` does.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from functools import lru_cache
from typing import Any, Final

import regex
from jsonschema import Draft202012Validator, ValidationError, validators
from jsonschema.exceptions import SchemaError
from referencing import Registry
from referencing.exceptions import NoSuchResource, Unresolvable

from .schema import MAX_VIOLATIONS, SchemaUnsupported, pointer_of

__all__ = ["MAX_SCHEMA_BYTES", "PATTERN_TIMEOUT", "check_schema", "violations"]

MAX_SCHEMA_BYTES: Final = 64 * 1024
PATTERN_TIMEOUT: Final = 0.05  # seconds for one regular expression on one string
_CACHE: Final = 256  # compiled validators kept (by the schema's JSON)


def _no_retrieval(uri: str) -> Any:
    raise NoSuchResource(ref=uri)  # type: ignore[call-arg]


_REGISTRY: Final = Registry(retrieve=_no_retrieval)  # type: ignore[call-arg]


def _search(pattern: str, instance: str) -> bool:
    try:
        return regex.search(pattern, instance, timeout=PATTERN_TIMEOUT) is not None
    except TimeoutError:
        return False  # a pattern that cannot decide in time does not match
    except regex.error:
        return False


def _pattern(
    validator: Any, pattern: str, instance: Any, schema: Mapping[str, Any]
) -> Iterator[ValidationError]:
    if isinstance(instance, str) and not _search(pattern, instance):
        yield ValidationError(f"does not match {pattern!r}")


def _pattern_properties(
    validator: Any, patterns: Mapping[str, Any], instance: Any, schema: Mapping[str, Any]
) -> Iterator[ValidationError]:
    if not isinstance(instance, dict):
        return
    for pattern, subschema in patterns.items():
        for name, value in instance.items():
            if _search(pattern, name):
                yield from validator.descend(value, subschema, path=name, schema_path=pattern)


_Validator: Final = validators.extend(
    Draft202012Validator, {"pattern": _pattern, "patternProperties": _pattern_properties}
)


def check_schema(schema: Any) -> None:
    """Refuse (`SchemaUnsupported`, reason `mcp_schema_invalid`, its path pointing at the
    faulty keyword) a tool schema that is not valid JSON Schema 2020-12 or that is too large;
    `schema_root_not_object` one whose root is not an object schema."""
    if not isinstance(schema, dict):
        raise SchemaUnsupported("mcp_schema_invalid")
    try:
        size = len(json.dumps(schema, allow_nan=False))
    except (TypeError, ValueError, RecursionError):
        raise SchemaUnsupported("mcp_schema_invalid") from None
    if size > MAX_SCHEMA_BYTES:
        raise SchemaUnsupported("mcp_schema_invalid")
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        raise SchemaUnsupported("mcp_schema_invalid", pointer_of(list(exc.path))) from None
    if schema.get("type") != "object":
        raise SchemaUnsupported("schema_root_not_object", "/type")


@lru_cache(maxsize=_CACHE)
def _compiled(text: str) -> Any:
    return _Validator(json.loads(text), registry=_REGISTRY)


def violations(schema: Mapping[str, Any], value: object) -> list[str]:
    """The JSON pointers of what `value` breaks in `schema` (checked by `check_schema`), at
    most `schema.MAX_VIOLATIONS`; empty when it fits. A reference that does not resolve, or a
    value too deep to walk, is one violation at the root. Never raises for a checked schema."""
    validator = _compiled(json.dumps(schema, sort_keys=True))
    found: list[str] = []
    try:
        for error in validator.iter_errors(value):
            found.append(pointer_of(list(error.absolute_path)))
            if len(found) == MAX_VIOLATIONS:
                break
    except (Unresolvable, RecursionError):
        return [""]
    return found
