"""The tool descriptor's call models (seed 004 §7.1): declared in code, derived when left out,
refused when they contradict the handling, and published whole in the inventory."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, ConfigDict

from lineup.sdk import AppInfo, MiniApp, ToolCall, tool
from lineup.sdk.manifest import ManifestInvalid, ToolDescriptor, load_manifest, manifest_json
from lineup.sdk.tools import manifest_of

CLOSED = {"type": "object", "additionalProperties": False}


class Empty(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


def descriptor(**fields: Any) -> ToolDescriptor:
    fields.setdefault("handling", "direct")
    return ToolDescriptor(method="probe.thing", input_schema=CLOSED, output_schema=CLOSED, **fields)


@pytest.mark.parametrize(
    ("handling", "model", "launch"),
    [
        ("direct", "command", "background"),
        ("launch", "command", "foreground"),
        ("foreground", "command", "never"),
        ("interactive", "interactive", "foreground"),
        ("operation", "operation", "never"),
    ],
)
def test_a_descriptor_without_a_call_model_gets_the_one_its_handling_means(
    handling: str, model: str, launch: str
) -> None:
    tool_ = descriptor(handling=handling)
    assert (tool_.model, tool_.launch_strategy) == (model, launch)
    published = tool_.published()
    assert (published["call_model"], published["launch"]) == (model, launch)
    assert (published["idempotent"], published["risk"]) == (False, "medium")


def test_a_query_never_launches_and_is_low_risk_unless_it_says_otherwise() -> None:
    query = descriptor(call_model="query")
    assert (query.launch_strategy, query.published()["risk"]) == ("never", "low")
    assert descriptor(call_model="query", risk="high").published()["risk"] == "high"


@pytest.mark.parametrize(
    ("fields", "path"),
    [
        ({"call_model": "query", "handling": "launch"}, "/handling"),
        ({"call_model": "query", "handling": "foreground"}, "/handling"),
        ({"call_model": "query", "launch": "background"}, "/launch"),
        ({"call_model": "query", "requires_foreground": True}, "/launch"),
        ({"handling": "launch", "launch": "never"}, "/launch"),
        ({"handling": "launch", "launch": "background"}, "/launch"),
        ({"handling": "foreground", "launch": "background"}, "/launch"),
    ],
)
def test_a_call_model_that_contradicts_the_handling_is_refused(
    fields: dict[str, Any], path: str
) -> None:
    with pytest.raises(ManifestInvalid) as refused:
        descriptor(**fields)
    assert (refused.value.reason, refused.value.path) == ("tool_declaration_invalid", path)


def test_the_full_descriptor_is_generated_from_the_code_and_round_trips() -> None:
    class Board(MiniApp):
        app_info = AppInfo(app_scope="board", version="1", kind="installed")

        @tool(
            "board.summary",
            handling="direct",
            input=Empty,
            output=Empty,
            title="Board summary",
            description="What the board holds, in a few words.",
            call_model="query",
            idempotent=True,
            risk="low",
            permissions=("clipboard.write",),
        )
        async def summary(self, call: ToolCall[Empty]) -> Empty:
            return Empty()

    manifest = manifest_of(Board)
    assert load_manifest(manifest_json(manifest)) == manifest
    published = manifest.placed_tools()[0].published()
    assert {k: published[k] for k in ("id", "app_scope", "method", "contract_version")} == {
        "id": "board.summary",
        "app_scope": "board",
        "method": "board.summary",
        "contract_version": "1",
    }
    assert {
        k: published[k]
        for k in ("title", "call_model", "launch", "idempotent", "risk", "permissions")
    } == {
        "title": "Board summary",
        "call_model": "query",
        "launch": "never",
        "idempotent": True,
        "risk": "low",
        "permissions": ["clipboard.write"],
    }
    assert published["timeout_ms"] == 120_000
    assert published["requires_foreground"] is False


def test_a_query_that_launches_is_refused_at_class_definition() -> None:
    with pytest.raises(ManifestInvalid) as refused:
        tool("probe.peek", handling="launch", input=Empty, output=Empty, call_model="query")
    assert refused.value.reason == "tool_declaration_invalid"


def test_a_declared_launch_strategy_wins_over_the_handlings() -> None:
    assert descriptor(handling="operation", launch="background").launch_strategy == "background"
    assert descriptor(handling="foreground", launch="foreground").launch_strategy == "foreground"
    assert descriptor(handling="direct", launch="never").launch_strategy == "never"
