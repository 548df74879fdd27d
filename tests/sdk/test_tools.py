"""Declaring tools in code: the decorator, the manifest it generates, and one call's dispatch."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import pytest
import trio
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from lineup.actors.kernel import ErrorCode, LineUpError
from lineup.sdk import (
    AppInfo,
    ManifestInvalid,
    MiniApp,
    ToolCall,
    ToolOutputInvalid,
    dispatch_tool,
    load_manifest,
    manifest_of,
    tool,
    tools_of,
)
from lineup.sdk.manifest import Entrypoint, ToolUi, manifest_json
from lineup.sdk.schema import validate

from ._dashboard import Dashboard, OpenInput, OpenOutput, TaskSummary, UpdateInput


@dataclass
class Recorder:
    """A `ToolSink` that records what reached it; `refusals` makes the next sends fail."""

    events: list[tuple[str, str, Any]] = field(default_factory=list)
    refusals: int = 0

    def _take(self, kind: str, call_id: str, body: Any) -> None:
        if self.refusals:
            self.refusals -= 1
            raise LineUpError(ErrorCode.ACTOR_RESTARTED, call_id)
        self.events.append((kind, call_id, body))

    async def progress(self, call_id: str, progress: dict[str, Any]) -> None:
        self._take("progress", call_id, progress)

    async def complete(self, call_id: str, result: dict[str, Any]) -> None:
        self._take("complete", call_id, result)

    async def fail(self, call_id: str, code: str, message: str = "") -> None:
        self._take("fail", call_id, code)

    async def cancel(self, call_id: str, reason: str) -> None:
        self._take("cancel", call_id, reason)

    @property
    def terminals(self) -> list[tuple[str, Any]]:
        return [(kind, body) for kind, _, body in self.events if kind != "progress"]


class Empty(BaseModel):
    model_config = ConfigDict(extra="forbid")


class Echo(BaseModel):
    model_config = ConfigDict(extra="forbid")

    text: str = Field(max_length=5)
    count: int = 1
    note: str | None = None


class Behaviour(MiniApp):
    """Handlers that misbehave in every way a handler can, one tool each."""

    app_info = AppInfo(app_scope="probe", version="0.1.0", kind="installed")

    def __init__(self) -> None:
        self.kept: ToolCall[Echo] | None = None

    @tool("probe.echo", handling="direct", input=Echo, output=Echo)
    async def echo(self, call: ToolCall[Echo]) -> Echo | None:
        return call.input

    @tool("probe.later", handling="operation", input=Echo, output=Echo)
    async def later(self, call: ToolCall[Echo]) -> Echo | None:
        self.kept = call
        return None

    @tool("probe.crash", handling="direct", input=Empty, output=Empty)
    async def crash(self, call: ToolCall[Empty]) -> Empty | None:
        raise RuntimeError("secret argument in the message")

    @tool("probe.wrong_model", handling="direct", input=Empty, output=Echo)
    async def wrong_model(self, call: ToolCall[Empty]) -> Echo | None:
        return Empty()  # type: ignore[return-value]  # the wrong model, on purpose

    @tool("probe.bad_output", handling="direct", input=Empty, output=Echo)
    async def bad_output(self, call: ToolCall[Empty]) -> Echo | None:
        return Echo.model_construct(text="far too long", count=1, note=None)

    @tool("probe.twice", handling="direct", input=Empty, output=Empty)
    async def twice(self, call: ToolCall[Empty]) -> Empty | None:
        await call.complete(Empty())
        return Empty()

    @tool("probe.fail_then_raise", handling="direct", input=Empty, output=Empty)
    async def fail_then_raise(self, call: ToolCall[Empty]) -> Empty | None:
        await call.fail("cancelled_by_user")
        raise RuntimeError("after the end")

    @tool("probe.forever", handling="direct", input=Empty, output=Empty)
    async def forever(self, call: ToolCall[Empty]) -> Empty | None:
        await trio.sleep_forever()
        return None


async def run(app: MiniApp, tool_id: str, raw: dict[str, Any], sink: Recorder) -> None:
    spec = tools_of(type(app))[tool_id]
    await dispatch_tool(app, spec, "c1", tool_id, "i1", raw, sink)


# ------------------------------------------------------------------------------ declaring


def test_the_decorated_methods_are_the_apps_tools() -> None:
    specs = tools_of(Dashboard)
    assert sorted(specs) == ["task-dashboard.open", "task-dashboard.update"]
    open_spec = specs["task-dashboard.open"]
    assert open_spec.input_model is OpenInput
    assert open_spec.output_model is OpenOutput
    assert open_spec.descriptor.handling == "launch"
    assert specs["task-dashboard.update"].descriptor.activation_requirement == (
        "activation_not_required"
    )


def test_a_decorated_method_stays_an_ordinary_method() -> None:
    assert Dashboard.open.__name__ == "open"


def test_the_manifest_describes_the_app_and_its_tools_in_id_order() -> None:
    manifest = manifest_of(Dashboard)
    assert manifest.format == "lineup.app.v1"
    assert (manifest.app_scope, manifest.version, manifest.kind) == (
        "task-dashboard",
        "1.0.0",
        "bundled-reference",
    )
    assert manifest.runtime_sdk.required_features == ("app.tools.v1",)
    assert [t.method for t in manifest.tools] == ["task-dashboard.open", "task-dashboard.update"]
    update = manifest.tools[1]
    assert (update.handling, update.timeout_ms, update.delivery) == (
        "operation",
        10_000,
        "miniapp_sdk",
    )


def test_a_generated_manifest_loads_back_equal() -> None:
    manifest = manifest_of(Dashboard)
    assert load_manifest(manifest_json(manifest)) == manifest


def test_the_input_schema_comes_from_the_model() -> None:
    schema = manifest_of(Dashboard).tools[0].input_schema
    assert schema["required"] == ["task_id", "title"]
    assert schema["properties"]["status"] == {"type": "string", "enum": ["todo", "doing", "done"]}
    assert validate(schema, {"task_id": "t1", "title": "Write"}) == []
    assert validate(schema, {"task_id": "t1", "title": "Write", "status": None}) == ["/status"]


def test_an_app_without_tools_has_a_manifest_without_the_tools_feature() -> None:
    class Quiet(MiniApp):
        app_info = AppInfo(app_scope="quiet", version="1", kind="system")

    manifest = manifest_of(Quiet)
    assert manifest.tools == ()
    assert manifest.runtime_sdk.required_features == ()


def test_an_apps_title_is_its_manifests_and_is_checked_when_the_class_is_declared() -> None:
    class Titled(MiniApp):
        app_info = AppInfo(app_scope="quiet", title="Quiet Corner", version="1", kind="system")

    assert manifest_of(Titled).title == "Quiet Corner"
    assert '"title": "Quiet Corner"' in manifest_json(manifest_of(Titled))
    with pytest.raises(ValidationError):
        AppInfo(app_scope="quiet", title="Quiet\tCorner", version="1", kind="system")


def test_a_subclass_inherits_tools_and_an_undecorated_override_removes_one() -> None:
    class Smaller(Dashboard):
        async def update(self, call: ToolCall[UpdateInput]) -> TaskSummary | None:
            return None

    assert sorted(tools_of(Smaller)) == ["task-dashboard.open"]


def declaration_refusal(**options: Any) -> str:
    arguments: dict[str, Any] = {"handling": "direct", "input": Empty, "output": Empty}
    arguments.update(options)
    tool_id = arguments.pop("id", "probe.x")
    with pytest.raises(ManifestInvalid) as refused:
        tool(tool_id, **arguments)  # refused before it sees a handler
    assert refused.value.code is ErrorCode.INVALID_ARGUMENTS
    return refused.value.reason


class NotForbidding(BaseModel):
    x: int


class WithPattern(BaseModel):
    model_config = ConfigDict(extra="forbid")

    x: str = Field(pattern="^a+$")


@pytest.mark.parametrize(
    ("options", "reason"),
    [
        ({"input": NotForbidding}, "model_extra_not_forbidden"),
        ({"output": WithPattern}, "schema_keyword_unsupported"),
        ({"input": dict}, "schema_model_unsupported"),
        ({"id": "Probe.X"}, "tool_declaration_invalid"),
        ({"id": "probe"}, "tool_declaration_invalid"),
        ({"handling": "later"}, "tool_declaration_invalid"),
        ({"activation": "soon"}, "tool_declaration_invalid"),
        ({"timeout_ms": 999}, "tool_declaration_invalid"),
        ({"timeout_ms": 24 * 3_600_000 + 1}, "tool_declaration_invalid"),
        ({"permissions": ("",)}, "tool_declaration_invalid"),
    ],
)
def test_a_tool_declaration_outside_the_contract_is_refused_when_the_class_is_defined(
    options: dict[str, Any], reason: str
) -> None:
    assert declaration_refusal(**options) == reason


def test_a_synchronous_handler_is_refused() -> None:
    with pytest.raises(ManifestInvalid) as refused:
        tool("probe.x", handling="direct", input=Empty, output=Empty)(
            lambda self, call: None  # type: ignore[arg-type, return-value]  # not async, on purpose
        )
    assert refused.value.reason == "tool_declaration_invalid"


def test_two_methods_declaring_one_tool_id_are_refused() -> None:
    class Twice(MiniApp):
        app_info = AppInfo(app_scope="probe", version="1", kind="installed")

        @tool("probe.same", handling="direct", input=Empty, output=Empty)
        async def one(self, call: ToolCall[Empty]) -> Empty | None:
            return None

        @tool("probe.same", handling="direct", input=Empty, output=Empty)
        async def two(self, call: ToolCall[Empty]) -> Empty | None:
            return None

    with pytest.raises(ManifestInvalid) as refused:
        manifest_of(Twice)
    assert refused.value.reason == "duplicate_tool"


def test_a_tool_in_the_runtimes_namespace_is_refused_in_the_manifest() -> None:
    class Stray(MiniApp):
        app_info = AppInfo(app_scope="probe", version="1", kind="installed")

        @tool("lineup.thing", handling="direct", input=Empty, output=Empty)
        async def thing(self, call: ToolCall[Empty]) -> Empty | None:
            return None

    with pytest.raises(ManifestInvalid) as refused:
        manifest_of(Stray)
    assert refused.value.reason == "tool_id_not_scoped"


def test_a_class_without_app_info_has_no_manifest() -> None:
    with pytest.raises(ManifestInvalid) as refused:
        manifest_of(MiniApp)
    assert refused.value.reason == "app_info_missing"


# ------------------------------------------------------------------------------ dispatching


async def test_a_returned_output_completes_the_call_without_its_unset_fields() -> None:
    sink = Recorder()
    await run(Behaviour(), "probe.echo", {"text": "hi"}, sink)
    assert sink.events == [("complete", "c1", {"text": "hi", "count": 1})]


@pytest.mark.parametrize(
    "raw",
    [
        {},
        {"text": "far too long"},
        {"text": "hi", "other": 1},
        {"text": "hi", "count": "5"},  # the model would coerce it; the schema does not
        {"text": "hi", "note": None},
        {"text": "hi", "count": True},
    ],
)
async def test_an_input_outside_the_schema_fails_the_call_before_the_handler(
    raw: dict[str, Any],
) -> None:
    app = Behaviour()
    sink = Recorder()
    await run(app, "probe.later", raw, sink)
    assert sink.terminals == [("fail", "tool_input_invalid")]
    assert app.kept is None


async def test_a_handler_returning_none_leaves_the_call_open_for_later() -> None:
    app = Behaviour()
    sink = Recorder()
    await run(app, "probe.later", {"text": "hi"}, sink)
    assert sink.events == []
    assert app.kept is not None
    assert (app.kept.call_id, app.kept.tool, app.kept.instance_id) == ("c1", "probe.later", "i1")
    await app.kept.progress({"done": 1})
    await app.kept.complete(Echo(text="bye"))
    assert sink.events == [
        ("progress", "c1", {"done": 1}),
        ("complete", "c1", {"text": "bye", "count": 1}),
    ]


async def test_a_second_terminal_is_refused_locally_and_never_sent() -> None:
    app = Behaviour()
    sink = Recorder()
    await run(app, "probe.later", {"text": "hi"}, sink)
    assert app.kept is not None
    await app.kept.fail("cancelled_by_user")
    for attempt in (
        app.kept.complete(Echo(text="x")),
        app.kept.fail("other"),
        app.kept.progress({}),
    ):
        with pytest.raises(LineUpError) as refused:
            await attempt
        assert refused.value.code is ErrorCode.CALL_ALREADY_FINAL
    assert sink.terminals == [("fail", "cancelled_by_user")]


async def test_completing_with_an_invalid_output_raises_and_sends_nothing() -> None:
    app = Behaviour()
    sink = Recorder()
    await run(app, "probe.later", {"text": "hi"}, sink)
    assert app.kept is not None
    with pytest.raises(ToolOutputInvalid) as refused:
        await app.kept.complete(Empty())
    assert refused.value.code is ErrorCode.TOOL_OUTPUT_INVALID
    assert not app.kept.final
    await app.kept.complete(Echo(text="ok"))
    assert sink.terminals == [("complete", {"text": "ok", "count": 1})]


async def test_a_failure_code_must_be_snake_case() -> None:
    app = Behaviour()
    await run(app, "probe.later", {"text": "hi"}, Recorder())
    assert app.kept is not None
    with pytest.raises(LineUpError) as refused:
        await app.kept.fail("Not A Code")
    assert refused.value.code is ErrorCode.INVALID_ARGUMENTS


async def test_a_terminal_the_runtime_did_not_take_can_be_sent_again() -> None:
    app = Behaviour()
    sink = Recorder()
    await run(app, "probe.later", {"text": "hi"}, sink)
    assert app.kept is not None
    sink.refusals = 1
    with pytest.raises(LineUpError):
        await app.kept.complete(Echo(text="one"))
    assert not app.kept.final
    await app.kept.complete(Echo(text="two"))
    assert sink.terminals == [("complete", {"text": "two", "count": 1})]


@pytest.mark.parametrize(
    ("tool_id", "code"),
    [
        ("probe.crash", "handler_failed"),
        ("probe.wrong_model", "tool_output_invalid"),
        ("probe.bad_output", "tool_output_invalid"),
    ],
)
async def test_a_misbehaving_handler_fails_its_call_with_a_stable_code(
    tool_id: str, code: str
) -> None:
    sink = Recorder()
    await run(Behaviour(), tool_id, {}, sink)
    assert sink.terminals == [("fail", code)]


async def test_a_handler_that_completed_and_also_returned_sends_one_terminal() -> None:
    sink = Recorder()
    await run(Behaviour(), "probe.twice", {}, sink)
    assert sink.terminals == [("complete", {})]


async def test_a_handler_that_failed_and_then_raised_sends_one_terminal() -> None:
    sink = Recorder()
    await run(Behaviour(), "probe.fail_then_raise", {}, sink)
    assert sink.terminals == [("fail", "cancelled_by_user")]


async def test_a_spec_dispatched_under_another_tool_id_is_refused() -> None:
    sink = Recorder()
    spec = tools_of(Behaviour)["probe.echo"]
    await dispatch_tool(Behaviour(), spec, "c1", "probe.other", "i1", {"text": "x"}, sink)
    assert sink.terminals == [("fail", "tool_not_advertised")]


async def test_cancelling_a_running_handler_is_not_reported_as_its_failure() -> None:
    sink = Recorder()
    with trio.CancelScope() as scope:
        scope.cancel()
        await run(Behaviour(), "probe.forever", {}, sink)
    assert scope.cancelled_caught
    assert sink.events == []


class Picky(BaseModel):
    model_config = ConfigDict(extra="forbid")

    x: int = 0

    @field_validator("x")
    @classmethod
    def _explode(cls, value: int) -> int:
        raise LookupError("a bug in the app's own validator")


class PickyApp(MiniApp):
    @tool("probe.picky", handling="direct", input=Picky, output=Picky)
    async def picky(self, call: ToolCall[Picky]) -> Picky | None:
        return call.input


async def test_an_input_model_whose_validator_breaks_fails_the_call_as_the_apps_fault() -> None:
    sink = Recorder()
    await run(PickyApp(), "probe.picky", {"x": 1}, sink)
    assert sink.terminals == [("fail", "handler_failed")]


def test_the_tool_decorator_links_a_tool_to_its_apps_surface() -> None:
    class Paged(MiniApp):
        app_info = AppInfo(
            app_scope="paged",
            version="1.0.0",
            kind="bundled-reference",
            entrypoints=(Entrypoint(id="page", kind="surface"),),
        )

        @tool(
            "paged.show",
            handling="direct",
            input=Empty,
            output=Empty,
            ui=ToolUi(entrypoint="page", visibility=("app",)),
        )
        async def show(self, call: ToolCall[Empty]) -> Empty:
            return Empty()

    (descriptor,) = manifest_of(Paged).tools
    assert descriptor.ui == ToolUi(entrypoint="page", visibility=("app",))
    assert not descriptor.agent_visible
