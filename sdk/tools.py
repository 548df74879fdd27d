"""Declaring a MiniApp's tools in code, and running one call of them.

Theory of operation
-------------------
A tool is an `async def` method of a `MiniApp` subclass, decorated with `@tool(...)` over two
pydantic models (input and output, both `extra="forbid"`). The decorator derives the subset JSON
schemas at class-definition time, so a model the subset cannot express fails at import, long
before an Agent calls it. `manifest_of` turns the class's `app_info` plus its tools into the
non-executable `Manifest` the runtime reads; the handlers themselves never leave the process.

At run time the process host looks up the `ToolSpec` (`tools_of`) and calls `dispatch_tool`,
which validates the input (by the same subset schema the runtime enforced, then by the model),
runs the handler, and reports through a `ToolSink` (the runtime side of the channel):

    handler returns an output model      complete(result)      (checked against the output)
    handler returns None                 nothing yet: the app completes later via the ToolCall
    input refused                        fail("tool_input_invalid")
    output refused                       fail("tool_output_invalid")
    handler raises                       fail("handler_failed")

A `ToolCall` sends at most one terminal result (complete or fail); a second one raises
`call_already_final` locally, without reaching the runtime.
"""

import inspect
import logging
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Final, Generic, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from lineup.actors.kernel import ErrorCode, LineUpError

from ._app import MiniApp
from ._tool_model import (
    DEFAULT_TIMEOUT_MS,
    Activation,
    AppScope,
    AppTitle,
    CallModel,
    Handling,
    LaunchStrategy,
    ManifestInvalid,
    Name,
    Risk,
    ToolDescriptor,
    ToolUi,
)
from .manifest import (
    AgentSubscription,
    Entrypoint,
    Host,
    Kind,
    Manifest,
    RuntimeSdk,
)
from .schema import SchemaUnsupported, schema_of

__all__ = [
    "AppInfo",
    "ToolCall",
    "ToolOutputInvalid",
    "ToolSink",
    "ToolSpec",
    "apps_in",
    "dispatch_tool",
    "manifest_of",
    "tool",
    "tools_of",
]

log = logging.getLogger("lineup.sdk.tools")

TOOLS_FEATURE: Final = "app.tools.v1"
_SPEC_ATTR: Final = "__lineup_tool__"
_CODE: Final = re.compile(r"^[a-z][a-z0-9_]{0,63}$")
MAX_FAIL_MESSAGE: Final = 500  # a failure names where the input broke, never what it held

In = TypeVar("In", bound=BaseModel)
Out = TypeVar("Out", bound=BaseModel)
A = TypeVar("A", bound=MiniApp)


class ToolSink(Protocol):
    """Where a call's progress and its one terminal result go (the runtime, or a fake)."""

    async def progress(self, call_id: str, progress: dict[str, Any]) -> None: ...

    async def complete(self, call_id: str, result: dict[str, Any]) -> None: ...

    async def fail(self, call_id: str, code: str, message: str = "") -> None: ...

    async def cancel(self, call_id: str, reason: str) -> None: ...


class ToolOutputInvalid(LineUpError):
    """The output is not an instance of the tool's output model, or breaks its schema."""

    default_code = ErrorCode.TOOL_OUTPUT_INVALID


class AppInfo(BaseModel):
    """The manifest facts of a MiniApp class, set as its `app_info` class attribute. `title`
    (optional) is the name the Shell shows for the app; without one it shows `app_scope`."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    app_scope: AppScope
    title: AppTitle | None = None
    version: str = Field(min_length=1, max_length=64)
    kind: Kind
    requested_capabilities: tuple[Name, ...] = ()
    surface_required: bool = False
    min_host_version: Name = "0.1.0"
    required_features: tuple[Name, ...] = ()
    optional_features: tuple[Name, ...] = ()
    entrypoints: tuple[Entrypoint, ...] = ()
    agent_subscriptions: tuple[AgentSubscription, ...] = ()


@dataclass(frozen=True, slots=True)
class ToolSpec:
    """A declared tool: its public descriptor plus what the SDK needs to run it."""

    descriptor: ToolDescriptor
    input_model: type[BaseModel]
    output_model: type[BaseModel]
    handler: "Callable[[Any, ToolCall[Any]], Awaitable[BaseModel | None]]"

    @property
    def id(self) -> str:
        return self.descriptor.method


def _result_of(spec: ToolSpec, output: object) -> dict[str, Any]:
    if not isinstance(output, spec.output_model):
        raise ToolOutputInvalid(message=spec.id)
    # None is never a value in the subset: an unset optional field is simply absent.
    result = output.model_dump(mode="json", by_alias=True, exclude_none=True)
    if spec.descriptor.output_violations(result):
        raise ToolOutputInvalid(message=spec.id)
    return result


class ToolCall(Generic[In]):
    """One call of a tool, as its handler sees it. Keep it to complete the call later."""

    def __init__(
        self,
        *,
        call_id: str,
        tool: str,
        input: In,
        instance_id: str,
        spec: ToolSpec,
        sink: ToolSink,
    ) -> None:
        self.call_id = call_id
        self.tool = tool
        self.input = input
        self.instance_id = instance_id
        self._spec = spec
        self._sink = sink
        self._final = False

    @property
    def final(self) -> bool:
        """A terminal result was sent (or is being sent)."""
        return self._final

    async def progress(self, progress: dict[str, Any]) -> None:
        """Report progress (a protocol fact, not bound by the output schema)."""
        self._check_open()
        await self._sink.progress(self.call_id, progress)

    async def complete(self, output: BaseModel) -> None:
        """Complete the call. Raises `ToolOutputInvalid` (sending nothing) if `output` is not a
        valid instance of the tool's output model, `call_already_final` after a terminal."""
        self._check_open()
        result = _result_of(self._spec, output)
        self._final = True  # before the await, so a second attempt racing this one is refused
        try:
            await self._sink.complete(self.call_id, result)
        except BaseException:
            self._final = False  # the runtime did not take it: the call is still open
            raise

    async def fail(self, code: str, message: str = "") -> None:
        """Fail the call with a stable snake_case `code` (e.g. "cancelled_by_user")."""
        self._check_open()
        if not _CODE.match(code):
            raise LineUpError(ErrorCode.INVALID_ARGUMENTS, "code must be snake_case")
        self._final = True
        try:
            await self._sink.fail(self.call_id, code, message)
        except BaseException:
            self._final = False
            raise

    async def cancel(self, reason: str = "cancelled_by_app") -> None:
        """End the call as cancelled (seed 003 §3.2), with a snake_case `reason` the Agent sees
        as the error code. Like `fail`, the runtime decides: a final call is refused."""
        self._check_open()
        if not _CODE.match(reason):
            raise LineUpError(ErrorCode.INVALID_ARGUMENTS, "reason must be snake_case")
        self._final = True
        try:
            await self._sink.cancel(self.call_id, reason)
        except BaseException:
            self._final = False
            raise

    def _check_open(self) -> None:
        if self._final:
            raise LineUpError(ErrorCode.CALL_ALREADY_FINAL, self.call_id)


def tool(
    id: str,
    *,
    handling: Handling,
    input: type[In],
    output: type[Out],
    activation: Activation = "app_ready",
    timeout_ms: int = DEFAULT_TIMEOUT_MS,
    requires_foreground: bool = False,
    restore_previous_focus: bool = True,
    permissions: tuple[str, ...] = (),
    description: str = "",
    title: str | None = None,
    call_model: CallModel | None = None,
    idempotent: bool | None = None,
    risk: Risk | None = None,
    launch: LaunchStrategy | None = None,
    ui: ToolUi | None = None,
) -> Callable[
    [Callable[[A, ToolCall[In]], Awaitable[Out | None]]],
    Callable[[A, ToolCall[In]], Awaitable[Out | None]],
]:
    """Declare an `async def handler(self, call: ToolCall[In]) -> Out | None` as the tool `id`
    (its `method`: `<app_scope>.<name>`, or the seeds' form without the scope). `title`,
    `call_model`, `idempotent`, `risk` and `launch` are the descriptor's (`lineup.sdk._tool_model`:
    left out, each is derived from `handling`); `permissions` are the capabilities it may use;
    `ui` links it to a `surface` entrypoint of the app (`ToolUi`: the runtime then shows its
    calls there, and `visibility` says whether the Agent, the app's Surface, or both may call it).

    Raises `ManifestInvalid` at class definition when an option is out of range or a model is
    outside the schema subset (reason from `lineup.sdk.schema`, or tool_declaration_invalid).
    """
    schemas: dict[str, dict[str, Any]] = {}
    for key, model in (("input_schema", input), ("output_schema", output)):
        try:
            schemas[key] = schema_of(model)
        except SchemaUnsupported as exc:
            raise ManifestInvalid(exc.reason, id, path=f"/{key}{exc.path}") from exc
    try:
        descriptor = ToolDescriptor(
            method=id,
            handling=handling,
            activation_requirement=activation,
            requires_foreground=requires_foreground,
            restore_previous_focus=restore_previous_focus,
            input_schema=schemas["input_schema"],
            output_schema=schemas["output_schema"],
            permissions=permissions,
            timeout_ms=timeout_ms,
            description=description,
            title=title,
            call_model=call_model,
            idempotent=idempotent,
            risk=risk,
            launch=launch,
            ui=ui,
        )
    except ValidationError as exc:
        first = exc.errors(include_url=False, include_input=False)[0]
        where = "/" + "/".join(str(part) for part in first["loc"])
        raise ManifestInvalid("tool_declaration_invalid", id, path=where) from None

    def decorate(
        handler: Callable[[A, ToolCall[In]], Awaitable[Out | None]],
    ) -> Callable[[A, ToolCall[In]], Awaitable[Out | None]]:
        if not inspect.iscoroutinefunction(handler):
            raise ManifestInvalid("tool_declaration_invalid", f"{id}: handler must be async def")
        setattr(handler, _SPEC_ATTR, ToolSpec(descriptor, input, output, handler))
        return handler

    return decorate


def apps_in(module: ModuleType) -> set[type[MiniApp]]:
    """The MiniApp classes `module` holds that declare an `app_info`: the app a package is
    (a development app's, or the one `lineup app` finds in PATH) when none is named."""
    return {
        value
        for value in vars(module).values()
        if isinstance(value, type)
        and issubclass(value, MiniApp)
        and isinstance(getattr(value, "app_info", None), AppInfo)
    }


def tools_of(app_class: type[MiniApp]) -> dict[str, ToolSpec]:
    """The tools a MiniApp class declares (inherited ones included; an override without the
    decorator removes the tool). Raises `ManifestInvalid("duplicate_tool")`."""
    found: dict[str, ToolSpec] = {}
    for name in sorted(dir(app_class)):
        spec = getattr(getattr(app_class, name, None), _SPEC_ATTR, None)
        if not isinstance(spec, ToolSpec):
            continue
        if spec.id in found:
            raise ManifestInvalid("duplicate_tool", spec.id)
        found[spec.id] = spec
    return found


def manifest_of(app_class: type[MiniApp]) -> Manifest:
    """Build the class's `lineup.app.v1` manifest from `app_info` and its tools (sorted by id).
    Adds the "app.tools.v1" feature when there are tools. Raises `ManifestInvalid`
    (app_info_missing, duplicate_tool, tool_id_not_scoped, tool_declaration_invalid, ...)."""
    info = getattr(app_class, "app_info", None)
    if not isinstance(info, AppInfo):
        raise ManifestInvalid("app_info_missing", app_class.__qualname__)
    specs = tools_of(app_class)
    required = info.required_features
    if specs and TOOLS_FEATURE not in required:
        required = (*required, TOOLS_FEATURE)
    return Manifest(
        format="lineup.app.v1",
        app_scope=info.app_scope,
        title=info.title,
        version=info.version,
        kind=info.kind,
        runtime_sdk=RuntimeSdk(
            required_features=required, optional_features=info.optional_features
        ),
        entrypoints=info.entrypoints,
        agent_subscriptions=info.agent_subscriptions,
        requested_capabilities=info.requested_capabilities,
        host=Host(min_version=info.min_host_version, surface_required=info.surface_required),
        tools=tuple(specs[key].descriptor for key in sorted(specs)),
    )


async def dispatch_tool(
    app: MiniApp,
    spec: ToolSpec,
    call_id: str,
    tool: str,
    instance_id: str,
    raw_input: dict[str, Any],
    sink: ToolSink,
) -> None:
    """Run one call of `spec` on `app` and report its outcome to `sink` (see the module
    docstring). Never raises for what the input or the handler do; raises only what the sink
    raises. Enforces no deadline: the runtime expires calls after `timeout_ms`."""
    if tool != spec.id:
        await sink.fail(call_id, ErrorCode.TOOL_NOT_ADVERTISED.value, tool)
        return
    violations = spec.descriptor.input_violations(raw_input)
    if violations:
        await sink.fail(call_id, ErrorCode.TOOL_INPUT_INVALID.value, _where(violations))
        return
    try:
        parsed = spec.input_model.model_validate(raw_input)
    except ValidationError as exc:
        where = sorted(
            {"/" + "/".join(map(str, e["loc"])) for e in exc.errors(include_input=False)}
        )
        await sink.fail(call_id, ErrorCode.TOOL_INPUT_INVALID.value, _where(where))
        return
    except Exception as exc:  # a validator of the app's own model broke, not the input
        log.warning("sdk.tool_input_model_failed tool=%s error=%s", tool, type(exc).__name__)
        await sink.fail(call_id, ErrorCode.HANDLER_FAILED.value)
        return
    call: ToolCall[BaseModel] = ToolCall(
        call_id=call_id, tool=tool, input=parsed, instance_id=instance_id, spec=spec, sink=sink
    )
    try:
        output = await spec.handler(app, call)
    except ToolOutputInvalid:
        if not call.final:
            await call.fail(ErrorCode.TOOL_OUTPUT_INVALID.value)
        return
    except Exception as exc:
        # The type only: an exception's text may quote the tool's arguments.
        log.warning("sdk.tool_handler_failed tool=%s error=%s", tool, type(exc).__name__)
        if not call.final:
            await call.fail(ErrorCode.HANDLER_FAILED.value)
        return
    if output is None:
        return
    if call.final:
        log.warning("sdk.tool_result_after_final tool=%s", tool)
        return
    try:
        await call.complete(output)
    except ToolOutputInvalid:
        await call.fail(ErrorCode.TOOL_OUTPUT_INVALID.value)


def _where(paths: list[str]) -> str:
    return " ".join(path or "/" for path in paths)[:MAX_FAIL_MESSAGE]
