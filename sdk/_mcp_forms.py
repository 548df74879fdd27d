"""An MCP server's form (`elicitation/create`, form mode) as a standard interaction. No I/O.

Theory of operation
-------------------
A form-mode elicitation carries a `message` and a `requestedSchema`: a flat object whose
properties are strings, numbers, integers, booleans, single-select enums (`enum`, `oneOf` of
`const`/`title`, legacy `enumNames`) and multi-select arrays of such enums (MCP 2025-06-18 and
2025-11-25). LineUp asks the user with one of its own standard interactions, which the runtime
owns (expiry, first answer wins, audit), so `ask_of` decides which one fits:

    no property                  confirm   Accept → accept `{}`, Decline → decline
    one boolean                  confirm   Yes / No → accept `{name: true|false}`
    one single-select enum       choice    single-choice → accept `{name: value}`
    one multi-select enum        choice    multi-choice → accept `{name: [values]}`
    anything else                input     strings as text fields (textarea past `MAX_TEXT`
                                           characters), numbers and integers as number fields
                                           with their bounds; a default is the placeholder

An input card has no boolean, select or list field: in a form of several properties such a
property is left out when it is optional (the server hears no value for it, as if the user left
it empty), and the whole form is refused (`FormUnsupported`, `mcp_elicitation_unsupported`)
when it is required, nested, or more than the card holds (`MAX_FIELDS`). The caller answers a
refused form `decline`.

`content_of(ask, result)` turns the interaction's checked result back into the form's content,
by the property names the ids stand for, and checks it against the requested schema (an
integer field answered 2.5, a list over `maxItems`): what does not fit is `FormUnsupported`
(`answer_invalid`), never sent to the server.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from lineup.actors.kernel import ErrorCode

from ._interaction_requests import MAX_ACTIONS, MAX_FIELDS, MAX_TEXT, MAX_TEXTAREA

__all__ = ["ELICIT_EXPIRES_IN_MS", "Ask", "FormUnsupported", "ask_of", "content_of"]

ELICIT_EXPIRES_IN_MS: Final = 10 * 60 * 1000  # the reference servers wait ten minutes
_TITLE: Final = 200
_LABEL: Final = 80
_PROMPT: Final = 8192
_PLACEHOLDER: Final = 200

Kind = Literal["confirm", "choice", "input"]


class FormUnsupported(ValueError):
    """A form LineUp cannot ask (or an answer that does not fit it): `code` says which."""

    def __init__(self, code: ErrorCode, why: str) -> None:
        super().__init__(why)
        self.code = code


@dataclass(frozen=True)
class Ask:
    """The standard interaction a form becomes, and how its answer maps back.

    `request` is the interaction request (with its `kind`); `names` maps each field or action
    id to what it stands for: a property name (input), or the enum value (choice).
    `prop` is the one property a confirm or a choice answers (None for an empty form)."""

    request: dict[str, Any]
    prop: str | None
    names: dict[str, Any]
    integers: frozenset[str]  # the input fields whose property is an integer
    schema: dict[str, Any]


def _refused(why: str) -> FormUnsupported:
    return FormUnsupported(ErrorCode.MCP_ELICITATION_UNSUPPORTED, why)


def _cut(text: object, limit: int) -> str:
    return str(text).strip()[:limit]


def _options(spec: Mapping[str, Any]) -> list[tuple[Any, str]] | None:
    """The (value, label) options of a single-select enum property, or None if it is not one."""
    if spec.get("type") not in ("string", None):
        return None
    if isinstance(spec.get("enum"), list):
        values = spec["enum"]
        names = spec.get("enumNames")
        labels = names if isinstance(names, list) and len(names) == len(values) else values
        return [(v, _option_label(n, v)) for v, n in zip(values, labels, strict=True)]
    one_of = spec.get("oneOf") if "oneOf" in spec else spec.get("anyOf")
    if isinstance(one_of, list) and all(isinstance(o, dict) and "const" in o for o in one_of):
        return [(o["const"], _option_label(o.get("title"), o["const"])) for o in one_of]
    return None


def _option_label(title: object, value: object) -> str:
    return _cut(title or "", _LABEL) or _cut(value, _LABEL) or "(empty)"


def _multi_options(spec: Mapping[str, Any]) -> list[tuple[Any, str]] | None:
    if spec.get("type") != "array" or not isinstance(spec.get("items"), dict):
        return None
    return _options(spec["items"])


def _label(name: str, spec: Mapping[str, Any]) -> str:
    return _cut(spec.get("title") or name, _LABEL) or name[:_LABEL]


def ask_of(title: str, message: str, schema: Mapping[str, Any]) -> Ask:
    """The standard interaction that asks the form (`message`, `schema`) of an app titled
    `title` (the module's docstring). Raises `FormUnsupported` (`mcp_elicitation_unsupported`)
    for a form no standard interaction can ask. Never raises anything else for any input."""
    if not isinstance(schema, Mapping) or schema.get("type", "object") != "object":
        raise _refused("the requested schema is not an object")
    props = schema.get("properties") or {}
    required = schema.get("required") or []
    if not isinstance(props, Mapping) or not isinstance(required, list):
        raise _refused("the requested schema's properties are malformed")
    if not all(isinstance(s, Mapping) for s in props.values()):
        raise _refused("a property is not a schema")
    plain = dict(schema)
    _checkable(plain)
    head: dict[str, Any] = {
        "title": _cut(title, _TITLE) or "An app asks",
        "prompt": _cut(message, _PROMPT) or "?",
    }
    request: dict[str, Any]
    if not props:
        request = {"kind": "confirm", **head, "approve_label": "Accept", "cancel_label": "Decline"}
        return Ask(request, None, {}, frozenset(), plain)
    if len(props) == 1:
        ((name, spec),) = props.items()
        if spec.get("type") == "boolean":
            request = {"kind": "confirm", **head, "approve_label": "Yes", "cancel_label": "No"}
            return Ask(request, name, {}, frozenset(), plain)
        single, multi = _options(spec), _multi_options(spec)
        options = single or multi
        if options is not None and 0 < len(options) <= MAX_ACTIONS:
            ids = {f"o{i}": value for i, (value, _) in enumerate(options)}
            actions = [{"id": f"o{i}", "label": lab} for i, (_, lab) in enumerate(options)]
            mode = "single-choice" if single is not None else "multi-choice"
            request = {"kind": "choice", **head, "mode": mode, "actions": actions}
            return Ask(request, name, ids, frozenset(), plain)
    return _input_of(head, props, required, plain)


def _input_of(
    head: dict[str, Any], props: Mapping[str, Any], required: list[Any], plain: dict[str, Any]
) -> Ask:
    fields: list[dict[str, Any]] = []
    names: dict[str, Any] = {}
    integers: set[str] = set()
    for name, spec in props.items():
        field = _field_of(spec, name in required)
        if field is None:
            if name in required:
                raise _refused("a required property has no field that can ask it")
            continue  # an optional one the card cannot show: left out
        field_id = f"f{len(fields)}"
        names[field_id] = name
        if spec.get("type") == "integer":
            integers.add(field_id)
        fields.append({"id": field_id, "label": _label(str(name), spec), **field})
    if not fields:
        raise _refused("no property has a field that can ask it")
    if len(fields) > MAX_FIELDS:
        raise _refused(f"more than {MAX_FIELDS} fields")
    request = {"kind": "input", **head, "fields": fields}
    return Ask(request, None, names, frozenset(integers), plain)


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def _field_of(spec: Mapping[str, Any], required: bool) -> dict[str, Any] | None:
    """An input field's type, bounds and placeholder for one property, or None."""
    kind = spec.get("type")
    if _options(spec) is not None or kind not in ("string", "number", "integer"):
        return None
    field: dict[str, Any] = {"required": required}
    hint = spec.get("default", spec.get("description"))
    if isinstance(hint, str | int | float) and not isinstance(hint, bool) and str(hint).strip():
        field["placeholder"] = _cut(hint, _PLACEHOLDER)
    if kind == "string":
        low, high = spec.get("minLength"), spec.get("maxLength")
        low = low if isinstance(low, int) and not isinstance(low, bool) and low >= 0 else None
        high = high if isinstance(high, int) and not isinstance(high, bool) and high >= 0 else None
        long = high is not None and high > MAX_TEXT
        cap = MAX_TEXTAREA if long else MAX_TEXT
        if (low or 0) > cap or (high is not None and low is not None and low > high):
            return None
        if required and high == 0:
            return None
        field["type"] = "textarea" if long else "text"
        if low:
            field["min_length"] = low
        if high is not None:
            field["max_length"] = min(high, cap)
        return field
    low_n, high_n = _number(spec.get("minimum")), _number(spec.get("maximum"))
    if low_n is not None and high_n is not None and low_n > high_n:
        return None
    field["type"] = "number"
    if low_n is not None:
        field["minimum"] = low_n
    if high_n is not None:
        field["maximum"] = high_n
    return field


def content_of(ask: Ask, result: Mapping[str, Any]) -> dict[str, Any] | None:
    """The form's content for the interaction's checked `result`, or None for a `decline`
    (an empty form's Decline). Raises `FormUnsupported` (`answer_invalid`) for an answer that
    breaks the requested schema."""
    kind = ask.request["kind"]
    if kind == "confirm":
        approved = result.get("approved") is True
        if ask.prop is None:
            return {} if approved else None
        content: dict[str, Any] = {ask.prop: approved}
    elif kind == "choice":
        chosen = [ask.names[i] for i in result.get("action_ids", ()) if i in ask.names]
        multi = ask.request["mode"] == "multi-choice"
        assert ask.prop is not None
        content = {ask.prop: chosen if multi else (chosen[0] if chosen else None)}
    else:
        content = {}
        for field_id, given in (result.get("values") or {}).items():
            if field_id not in ask.names:
                continue
            whole = field_id in ask.integers and isinstance(given, float) and given.is_integer()
            content[ask.names[field_id]] = int(given) if whole else given
    _check(ask.schema, content)
    return content


def _checkable(schema: dict[str, Any]) -> None:
    from ._mcp_schema import check_schema  # jsonschema, imported on the first form
    from .schema import SchemaUnsupported

    try:
        check_schema(schema)
    except SchemaUnsupported as exc:
        raise _refused("the requested schema is not one the library can check") from exc


def _check(schema: Mapping[str, Any], content: Mapping[str, Any]) -> None:
    from ._mcp_schema import violations  # jsonschema, imported on the first answer

    try:
        broken = violations(schema, dict(content))
    except Exception as exc:  # a schema the library cannot take: the answer cannot be checked
        raise FormUnsupported(ErrorCode.ANSWER_INVALID, "the form cannot be checked") from exc
    if broken:
        raise FormUnsupported(ErrorCode.ANSWER_INVALID, "the answer breaks the form's schema")
