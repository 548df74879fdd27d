"""`lineup.app.v1`: what loads, and every refusal with its stable reason."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from lineup import __version__
from lineup.actors.kernel import ErrorCode
from lineup.actors.store.messages import ToolCallFacts
from lineup.facts.limits import MAX_TOOL_ID
from lineup.sdk.manifest import (
    ANY_HOST,
    MAX_MANIFEST_BYTES,
    MAX_TITLE,
    SEED_FEATURES,
    Manifest,
    ManifestInvalid,
    ToolDescriptor,
    incompatibility,
    load_manifest,
    manifest_json,
    split_tool_id,
)

CLOSED = {"type": "object", "additionalProperties": False}


def whiteboard() -> dict[str, Any]:
    """Seed 004 §9's example, with the fields seed 003 §4.1 adds and its tool id scoped."""
    return {
        "format": "lineup.app.v1",
        "app_scope": "whiteboard",
        "version": "1.0.0",
        "kind": "bundled-reference",
        "runtime_sdk": {
            "api_version": "1",
            "required_features": [
                "app.lifecycle.v1",
                "app.tools.v1",
                "surface.state.v1",
                "app.session-data.v1",
            ],
            "optional_features": ["artifact.create.v1"],
        },
        "entrypoints": [{"id": "canvas", "kind": "contextual", "default_eligible": False}],
        "agent_subscriptions": [
            {"type": "lineup.app.state.patch", "scope": "instance"},
            {"type": "lineup.tool.invoke", "scope": "conversation"},
        ],
        "requested_capabilities": [],
        "host": {"min_version": "0.1.0", "surface_required": True},
        "tools": [
            {
                "method": "whiteboard.board.create",
                "contract_version": "1",
                "handling": "direct",
                "delivery": "miniapp_sdk",
                "activation_requirement": "app_ready",
                "input_schema": dict(CLOSED),
                "output_schema": dict(CLOSED),
            }
        ],
    }


def with_tool(**changes: Any) -> dict[str, Any]:
    manifest = whiteboard()
    manifest["tools"][0].update(changes)
    return manifest


def refusal(data: Any) -> ManifestInvalid:
    with pytest.raises(ManifestInvalid) as refused:
        load_manifest(data)
    assert refused.value.code is ErrorCode.INVALID_ARGUMENTS
    return refused.value


def test_the_seed_example_loads_with_the_tool_defaults_filled_in() -> None:
    manifest = load_manifest(whiteboard())
    assert manifest.app_scope == "whiteboard"
    assert manifest.host.surface_required is True
    (tool,) = manifest.tools
    assert tool.method == "whiteboard.board.create"
    assert tool.timeout_ms == 120_000
    assert tool.requires_foreground is False
    assert tool.restore_previous_focus is True
    assert tool.permissions == ()


def test_a_manifest_loads_the_same_from_a_dict_text_and_bytes() -> None:
    text = json.dumps(whiteboard())
    assert load_manifest(text) == load_manifest(text.encode()) == load_manifest(whiteboard())


def test_a_written_manifest_loads_back_equal() -> None:
    manifest = load_manifest(whiteboard())
    assert load_manifest(manifest_json(manifest)) == manifest


def test_the_written_form_has_sorted_keys_and_two_space_indent() -> None:
    text = manifest_json(load_manifest(whiteboard()))
    assert text == json.dumps(json.loads(text), sort_keys=True, indent=2) + "\n"


def test_a_manifest_is_frozen() -> None:
    manifest = load_manifest(whiteboard())
    with pytest.raises(ValidationError):
        manifest.version = "2.0.0"  # type: ignore[misc]  # frozen: the refusal under test


def test_a_manifest_without_tools_loads() -> None:
    data = whiteboard()
    del data["tools"]
    assert load_manifest(data).tools == ()


@pytest.mark.parametrize("title", ["Draw and Guess", "É", "x" * MAX_TITLE, "Tâches · 任务 ✓"])
def test_a_title_is_kept_and_written(title: str) -> None:
    manifest = load_manifest({**whiteboard(), "title": title})
    assert manifest.title == title
    assert json.loads(manifest_json(manifest))["title"] == title
    assert load_manifest(manifest_json(manifest)) == manifest


def test_a_manifest_without_a_title_is_written_without_one() -> None:
    manifest = load_manifest(whiteboard())
    assert manifest.title is None
    for dumped in (manifest.model_dump(mode="json"), json.loads(manifest.model_dump_json())):
        assert "title" not in dumped  # never `"title": null`, wherever the manifest goes
    assert "title" not in manifest_json(manifest)
    assert "title" not in manifest_json(load_manifest({**whiteboard(), "title": None}))


@pytest.mark.parametrize(
    ("title", "kind"),
    [
        ("", "string_too_short"),
        ("x" * (MAX_TITLE + 1), "string_too_long"),
        ("Draw\nGuess", "title_not_plain_text"),
        ("Draw\x00", "title_not_plain_text"),
        ("Draw\u200bGuess", "title_not_plain_text"),  # zero-width space (a format character)
        ("\u202eDraw", "title_not_plain_text"),  # right-to-left override
        ("Draw\u2028Guess", "title_not_plain_text"),  # line separator
        (" Draw", "title_not_plain_text"),
        ("   ", "title_not_plain_text"),
        (7, "string_type"),
    ],
)
def test_a_title_out_of_bounds_or_not_plain_text_is_refused_with_its_path(
    title: object, kind: str
) -> None:
    refused = refusal({**whiteboard(), "title": title})
    assert (refused.reason, refused.path) == ("manifest_malformed", "/title")
    assert kind in str(refused)
    with pytest.raises(ValidationError):  # built in code, checked the same
        Manifest.model_validate({**whiteboard(), "title": title})


@pytest.mark.parametrize(
    "data",
    [
        "{",
        b"\xff",
        "[]",
        '{"format": NaN}',
        '{"format": "lineup.app.v1", "format": "lineup.app.v1"}',
        "[" * 100_000 + "]" * 100_000,
        " " * (MAX_MANIFEST_BYTES + 1),
    ],
)
def test_text_that_is_not_one_json_object_is_refused(data: str | bytes) -> None:
    assert refusal(data).reason == "manifest_not_json"


@pytest.mark.parametrize("value", [None, "lineup.app.v2", "lineup.v1"])
def test_a_manifest_of_another_format_is_refused(value: Any) -> None:
    data = whiteboard()
    data["format"] = value
    refused = refusal(data)
    assert (refused.reason, refused.path) == ("format_unsupported", "/format")


def _malformed(change: str) -> dict[str, Any]:
    data = whiteboard()
    if change == "missing kind":
        del data["kind"]
    elif change == "missing host":
        del data["host"]
    elif change == "unknown field":
        data["signature"] = "x"
    elif change == "bad kind":
        data["kind"] = "trusted"
    elif change == "bad scope":
        data["app_scope"] = "White Board"
    elif change == "bad api version":
        data["runtime_sdk"]["api_version"] = "one"
    elif change == "bad subscription scope":
        data["agent_subscriptions"][0]["scope"] = "global"
    elif change == "tools not a list":
        data["tools"] = {"x": 1}
    else:
        tool = data["tools"][0]
        key, _, value = change.partition("=")
        if value == "<missing>":
            del tool[key]
        else:
            tool[key] = json.loads(value)
    return data


@pytest.mark.parametrize(
    "change",
    [
        "unknown field",
        "bad kind",
        "bad scope",
        "bad api version",
        "bad subscription scope",
        "tools not a list",
        "method=<missing>",
        'handling="background"',
        'delivery="http"',
        'activation_requirement="whenever"',
        'contract_version="2"',
        "contract_version=1",
        "timeout_ms=999",
        "timeout_ms=86400001",
        'timeout_ms="120000"',
        "timeout_ms=120000.5",
        'requires_foreground="yes"',
        "restore_previous_focus=1",
        'method="Whiteboard.Create"',
        'handler="module:function"',
        "permissions=[1]",
    ],
)
def test_a_malformed_field_is_refused(change: str) -> None:
    assert refusal(_malformed(change)).reason == "manifest_malformed"


def test_the_extreme_timeouts_are_accepted() -> None:
    assert load_manifest(with_tool(timeout_ms=1_000)).tools[0].timeout_ms == 1_000
    assert load_manifest(with_tool(timeout_ms=86_400_000)).tools[0].timeout_ms == 86_400_000


def test_a_tool_named_as_the_seeds_name_it_loads_and_is_called_by_scope_and_method() -> None:
    # Seed 004 §7.1: `whiteboard / board.create / 1`; its method does not repeat the scope.
    (tool,) = load_manifest(with_tool(method="board.create")).placed_tools()
    assert (tool.method, tool.scope) == ("board.create", "whiteboard")
    assert tool.id == "whiteboard/board.create"


def test_a_tool_whose_method_only_starts_like_the_scope_is_named_unambiguously() -> None:
    (tool,) = load_manifest(with_tool(method="whiteboards.create")).placed_tools()
    assert tool.id == "whiteboard/whiteboards.create"
    assert split_tool_id(tool.id) == ("whiteboard", "whiteboards.create")


@pytest.mark.parametrize("method", ["interaction.confirm", "lineup.stop", "lineup-shell.open"])
def test_a_method_in_the_runtimes_own_namespace_is_refused(method: str) -> None:
    refused = refusal(with_tool(method=method))
    assert (refused.reason, refused.path) == ("tool_id_not_scoped", "/tools/0/method")


def test_a_tool_that_names_another_apps_scope_is_refused() -> None:
    refused = refusal(with_tool(app_scope="tasks"))
    assert (refused.reason, refused.path) == ("tool_id_not_scoped", "/tools/0/method")


@pytest.mark.parametrize("scope", ["interaction", "conversation", "lineup", "lineup-shell"])
def test_the_runtimes_own_scopes_are_taken_by_no_manifest(scope: str) -> None:
    # Else an app could list `interaction.confirm` beside the runtime's own (issue 27).
    data = with_tool(method=f"{scope}.confirm")
    data["app_scope"] = scope
    refused = refusal(data)
    assert (refused.reason, refused.path) == ("scope_reserved", "/app_scope")


def test_a_scope_that_only_starts_like_the_runtimes_is_an_apps() -> None:
    data = with_tool(method="lineupx.board.create")
    data["app_scope"] = "lineupx"
    assert load_manifest(data).app_scope == "lineupx"


@pytest.mark.parametrize("power", ["app.install", "app.manage"])
def test_the_app_registrys_powers_are_declared_by_no_other_app(power: str) -> None:
    data = whiteboard()
    data["requested_capabilities"] = ["notification.show", power]
    refused = refusal(data)
    assert (refused.reason, refused.path) == ("capability_reserved", "/requested_capabilities/1")
    registry = with_tool(method="app-registry.open")
    registry.update(app_scope="app-registry", requested_capabilities=[power])
    assert load_manifest(registry).requested_capabilities == (power,)


def test_two_tools_with_one_id_are_refused() -> None:
    data = whiteboard()
    data["tools"].append(copy.deepcopy(data["tools"][0]))
    refused = refusal(data)
    assert (refused.reason, refused.path) == ("duplicate_tool", "/tools/1/method")


@pytest.mark.parametrize(
    ("schema", "reason", "path"),
    [
        (
            {**CLOSED, "properties": {"url": {"type": "string", "format": "uri"}}},
            "schema_keyword_unsupported",
            "/properties/url/format",
        ),
        ({"$ref": "https://example.com/schema.json"}, "schema_keyword_unsupported", "/$ref"),
        ({"type": "object"}, "schema_additional_properties_required", "/additionalProperties"),
        ({"type": "string"}, "schema_root_not_object", "/type"),
        ("object", "schema_malformed", ""),
    ],
)
@pytest.mark.parametrize("key", ["input_schema", "output_schema"])
def test_a_tool_schema_outside_the_subset_is_refused_with_its_path(
    key: str, schema: Any, reason: str, path: str
) -> None:
    refused = refusal(with_tool(**{key: schema}))
    assert (refused.reason, refused.path) == (reason, f"/tools/0/{key}{path}")


def test_a_manifest_built_in_code_is_checked_like_a_loaded_one() -> None:
    tool = ToolDescriptor(
        method="interaction.create", handling="direct", input_schema=CLOSED, output_schema=CLOSED
    )
    with pytest.raises(ManifestInvalid) as refused:
        Manifest(
            format="lineup.app.v1",
            app_scope="whiteboard",
            version="1",
            kind="installed",
            host={"min_version": "0.1.0"},
            tools=(tool,),
        )
    assert refused.value.reason == "tool_id_not_scoped"


def test_a_tool_descriptor_built_in_code_checks_its_schemas() -> None:
    with pytest.raises(ManifestInvalid) as refused:
        ToolDescriptor(
            method="whiteboard.create",
            handling="direct",
            input_schema={"type": "object", "additionalProperties": False, "not": {}},
            output_schema=CLOSED,
        )
    assert (refused.value.reason, refused.value.path) == (
        "schema_keyword_unsupported",
        "/input_schema/not",
    )


# ------------------------------------------------------------------ seed 004 §9, as written

SEED_EXAMPLE = Path(__file__).parent / "fixtures" / "seed_004_manifest.json"


def test_the_seeds_own_example_manifest_loads_as_written_and_this_host_runs_it() -> None:
    # The fixture is seed 004 §9's text, byte for byte: no kind, no host, the seeds' feature
    # names and its tool named `board.create`.
    manifest = load_manifest(SEED_EXAMPLE.read_bytes())
    assert incompatibility(manifest, __version__) is None
    assert (manifest.kind, manifest.host.min_version) == ("installed", ANY_HOST)
    (tool,) = manifest.placed_tools()
    assert (tool.id, tool.method, tool.contract_version) == (
        "whiteboard/board.create",
        "board.create",
        "1",
    )


@pytest.mark.parametrize("feature", sorted(SEED_FEATURES))
def test_each_seed_feature_name_is_offered_beside_lineups_own(feature: str) -> None:
    data = whiteboard()
    data["runtime_sdk"]["required_features"] = [feature, "app.session_data.v1"]
    assert incompatibility(load_manifest(data)) is None


def test_a_feature_neither_names_is_still_a_version_mismatch() -> None:
    data = whiteboard()
    data["runtime_sdk"]["required_features"] = ["surface.telepathy.v1"]
    assert incompatibility(load_manifest(data)) is ErrorCode.APP_VERSION_MISMATCH


def test_a_manifest_written_by_lineup_keeps_its_tools_as_they_were_declared() -> None:
    # No field the manifest did not declare is written: today's manifests dump as before.
    text = manifest_json(load_manifest(whiteboard()))
    assert set(json.loads(text)["tools"][0]) == {
        "method", "contract_version", "handling", "delivery", "activation_requirement",
        "requires_foreground", "restore_previous_focus", "input_schema", "output_schema",
        "permissions", "timeout_ms", "description",
    }  # fmt: skip


def test_a_tool_whose_id_no_call_could_name_is_refused() -> None:
    data = with_tool(method="b." + "c" * 40)
    data["app_scope"] = "a" * 60  # the id `aaa…/b.ccc…` is longer than a call's tool may be
    refused = refusal(data)
    assert (refused.reason, refused.path) == ("tool_id_too_long", "/tools/0/method")


def test_the_longest_tool_id_is_what_the_store_records_a_calls_tool_as() -> None:
    schema = ToolCallFacts.model_json_schema()["properties"]["tool"]
    assert schema["maxLength"] == MAX_TOOL_ID


def with_ui(ui: dict[str, Any], *, kind: str = "surface") -> dict[str, Any]:
    data = with_tool(ui=ui)
    data["entrypoints"].append({"id": "page", "kind": kind})
    return data


def test_a_tool_linked_to_a_surface_of_its_app_loads_visible_to_both_by_default() -> None:
    (tool,) = load_manifest(with_ui({"entrypoint": "page"})).tools
    assert tool.ui is not None
    assert (tool.ui.entrypoint, tool.ui.visibility) == ("page", ("model", "app"))
    assert tool.agent_visible and tool.app_callable
    assert load_manifest(manifest_json(load_manifest(with_ui({"entrypoint": "page"})))) == (
        load_manifest(with_ui({"entrypoint": "page"}))
    )


def test_an_app_only_tool_is_not_the_agents_and_a_model_only_one_not_the_surfaces() -> None:
    (app_only,) = load_manifest(with_ui({"entrypoint": "page", "visibility": ["app"]})).tools
    assert (app_only.agent_visible, app_only.app_callable) == (False, True)
    (model_only,) = load_manifest(with_ui({"entrypoint": "page", "visibility": ["model"]})).tools
    assert (model_only.agent_visible, model_only.app_callable) == (True, False)
    (plain,) = load_manifest(whiteboard()).tools
    assert (plain.agent_visible, plain.app_callable) == (True, False)


@pytest.mark.parametrize(
    ("ui", "kind"),
    [({"entrypoint": "nowhere"}, "surface"), ({"entrypoint": "page"}, "contextual")],
)
def test_a_tool_linked_to_no_surface_entrypoint_of_its_app_is_refused(
    ui: dict[str, Any], kind: str
) -> None:
    refused = refusal(with_ui(ui, kind=kind))
    assert (refused.reason, refused.path) == ("tool_ui_not_a_surface", "/tools/0/ui/entrypoint")


@pytest.mark.parametrize("visibility", [[], ["user"], ["app", "app"]])
def test_a_visibility_outside_the_specs_values_is_malformed(visibility: list[str]) -> None:
    refused = refusal(with_ui({"entrypoint": "page", "visibility": visibility}))
    assert refused.reason == "manifest_malformed"
