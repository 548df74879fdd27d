"""The App Registry's logic through the SDK's testkit only: no runtime, no processes.

The runtime's capability decisions are scripted here (`Runtime.script`): each test says what
the gateway answers and checks what the app asked and what the Surface shows.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from lineup.miniapps import app_registry as registry_package
from lineup.miniapps.app_registry import AppRegistry
from lineup.sdk import ErrorCode, LineUpError, capabilities, testkit
from lineup.sdk import protocol as p
from lineup.sdk.manifest import load_manifest, manifest_json
from lineup.sdk.testkit import FakeRuntime
from lineup.sdk.tools import manifest_of

INSTANCE = testkit.DEFAULT_INSTANCE
SCOPE = "app-registry"
BUNDLE_NAME = "probe-1.0.0.lineup"

Script = Callable[[p.CapabilityRequest], p.CapabilityResult]


def app_info(scope: str, **extra: Any) -> p.RegistryAppInfo:
    fields: dict[str, Any] = {
        "app_scope": scope,
        "title": scope.title(),
        "version": "1.0.0",
        "kind": "installed",
        "source": "installed",
        "enabled": True,
        "state": "active",
        "removable": True,
        **extra,
    }
    return p.RegistryAppInfo(**fields)


def operation(kind: str, scope: str, state: str = "completed", **extra: Any) -> dict[str, Any]:
    info = p.AppOperationInfo(
        operation_id=f"op-{kind}-{scope}",
        app_scope=scope,
        kind=kind,
        state=state,
        created_at=1.0,
        updated_at=2.0,
        **extra,
    )
    return info.model_dump(mode="json")


def result(
    request: p.CapabilityRequest,
    status: p.CapabilityStatusValue = "completed",
    code: str | None = None,
    output: dict[str, Any] | None = None,
) -> p.CapabilityResult:
    return p.CapabilityResult(
        request_id=request.request_id,
        capability=request.capability,
        status=status,
        code=code,
        output=output if status == "completed" else None,
    )


class Runtime(FakeRuntime):
    """The fake runtime, with the gateway's capability decisions scripted per capability."""

    def __init__(self) -> None:
        super().__init__(SCOPE, INSTANCE)
        self.asked: list[p.CapabilityRequest] = []
        self.scripts: dict[str, Script] = {}
        self.busy_when_asked: list[Any] = []
        self.registry.apps = [
            app_info("chat", kind="system", source="system", removable=False),
            app_info(SCOPE, kind="core", source="bundled", removable=False),
            app_info("whiteboard", kind="bundled-reference", source="bundled", removable=False),
        ]

    def _answer(self, request: Any) -> Any:
        if isinstance(request, p.CapabilityRequest):
            # The input is one the gateway takes (the catalog's model), or the test fails.
            capabilities.parse_input(request.capability, request.input)
            assert request.capability in AppRegistry.app_info.requested_capabilities
            self.asked.append(request)
            surface = self.surfaces.of(INSTANCE)
            self.busy_when_asked.append(None if surface is None else surface.state.get("busy"))
            script = self.scripts.get(request.capability)
            if script is None:
                return result(request, "failed", "unsupported_on_host")
            return script(request)
        return super()._answer(request)


def picked(request: p.CapabilityRequest) -> p.CapabilityResult:
    artifact = {
        "type": "gateway.sdk.artifact.info",
        "artifact_id": "art-bundle-1",
        "app_scope": SCOPE,
        "instance_id": request.instance_id,
        "name": BUNDLE_NAME,
        "media_type": p.BUNDLE_MEDIA_TYPE,
        "size": 1000,
        "sha256": "0" * 64,
        "created_at": 1.0,
    }
    return result(request, output={"artifact": artifact})


async def started() -> tuple[AppRegistry, Runtime]:
    app = AppRegistry()
    runtime = Runtime()
    await testkit.start(app, runtime=runtime)
    return app, runtime


def state(runtime: FakeRuntime) -> dict[str, Any]:
    surface = runtime.surfaces.of(INSTANCE)
    assert surface is not None
    return surface.state


def row(runtime: FakeRuntime, scope: str) -> dict[str, Any]:
    return next(r for r in state(runtime)["apps"] if r["app_scope"] == scope)


def status(runtime: FakeRuntime) -> dict[str, Any]:
    line = state(runtime).get("status")
    assert isinstance(line, dict)
    return line


# ---------------------------------------------------------------------------------- listing


async def test_starting_opens_the_registry_surface_on_its_instance_with_the_listing() -> None:
    _, runtime = await started()
    surface = runtime.surfaces.of(INSTANCE)
    assert surface is not None and surface.entrypoint == "registry"
    shown = state(runtime)
    assert [r["app_scope"] for r in shown["apps"]] == ["chat", SCOPE, "whiteboard"]
    assert shown["default_app"] == "chat"
    assert row(runtime, "chat")["default"] is True
    assert row(runtime, "whiteboard")["default"] is False
    assert shown.get("busy") is None
    assert runtime.registry.lists == 1


async def test_each_row_offers_only_the_actions_that_apply_to_it() -> None:
    app = AppRegistry()
    runtime = Runtime()
    runtime.registry.apps += [
        app_info("probe", predecessor="0.9.0"),
        app_info("off", enabled=False),
        app_info("broken", state="unavailable"),
        app_info("dev", source="dev", removable=False),
    ]
    await testkit.start(app, runtime=runtime)
    # Chat and core apps are never disabled or removed; the chat is the default already.
    assert row(runtime, "chat")["actions"] == []
    assert row(runtime, SCOPE)["actions"] == ["set_default"]
    # A bundled app: no Remove, no Roll back.
    assert row(runtime, "whiteboard")["actions"] == ["disable", "set_default"]
    assert row(runtime, "probe")["actions"] == ["disable", "rollback", "remove", "set_default"]
    assert row(runtime, "off")["actions"] == ["enable", "remove"]
    assert row(runtime, "broken")["actions"] == ["disable", "remove"]
    assert row(runtime, "dev")["actions"] == ["disable", "set_default"]
    assert row(runtime, "probe")["predecessor"] == "0.9.0"


async def test_a_row_shows_version_kind_source_state_and_the_latest_operation() -> None:
    app = AppRegistry()
    runtime = Runtime()
    op = p.AppOperationInfo.model_validate(
        operation("update", "probe", "failed", version="2.0.0", code="digest_mismatch")
    )
    runtime.registry.apps.append(app_info("probe", version="1.0.0", operation=op))
    runtime.registry.default_app = "probe"
    await testkit.start(app, runtime=runtime)
    shown = row(runtime, "probe")
    assert {k: shown[k] for k in ("version", "kind", "source", "enabled", "state")} == {
        "version": "1.0.0",
        "kind": "installed",
        "source": "installed",
        "enabled": True,
        "state": "active",
    }
    assert shown["operation"] == {
        "kind": "update",
        "state": "failed",
        "version": "2.0.0",
        "code": "digest_mismatch",
    }
    assert shown["default"] is True
    assert "set_default" not in shown["actions"]


async def test_the_surface_asking_for_a_refresh_reads_the_registry_again() -> None:
    _, runtime = await started()
    runtime.registry.apps.append(app_info("probe"))
    await runtime.send_surface_event("registry.refresh", {"action_id": "refresh-0001"})
    assert runtime.registry.lists == 2
    assert "probe" in [r["app_scope"] for r in state(runtime)["apps"]]


async def test_a_registry_that_cannot_be_read_is_a_status_line_with_its_code() -> None:
    _, runtime = await started()
    runtime.refuse(p.RegistryListRequest, ErrorCode.DEADLINE_EXCEEDED)
    await runtime.send_surface_event("registry.refresh", {"action_id": "refresh-0001"})
    assert status(runtime)["tone"] == "error"
    assert status(runtime)["code"] == "deadline_exceeded"
    assert len(state(runtime)["apps"]) == 3  # the last listing stays


async def test_the_testkit_answers_the_registry_to_the_app_registry_alone() -> None:
    runtime = FakeRuntime("whiteboard")
    with pytest.raises(LineUpError) as refused:
        await runtime.context().registry.list()
    assert refused.value.code is ErrorCode.PERMISSION_DENIED
    mine = await FakeRuntime(SCOPE).context().registry.list()
    assert mine.apps == () and mine.default_app == "chat"


# ---------------------------------------------------------------------------------- install


async def test_install_from_file_asks_file_open_for_a_bundle_then_app_install_of_it() -> None:
    _, runtime = await started()

    def install(request: p.CapabilityRequest) -> p.CapabilityResult:
        runtime.registry.apps.append(app_info("probe"))
        return result(request, output={"operation": operation("install", "probe", version="1.0.0")})

    runtime.scripts = {"file.open": picked, "app.install": install}
    await runtime.send_surface_event("registry.install", {"action_id": "click-0001"})
    file_open, app_install = runtime.asked
    assert file_open.capability == "file.open"
    assert file_open.instance_id == INSTANCE
    assert file_open.input == {"media_types": [p.BUNDLE_MEDIA_TYPE]}
    assert app_install.capability == "app.install"
    assert app_install.input == {"artifact_id": "art-bundle-1"}
    assert app_install.instance_id == INSTANCE
    assert file_open.request_id != app_install.request_id
    assert runtime.busy_when_asked == ["install", "install"]
    assert status(runtime) == {"tone": "ok", "text": "Installed Probe 1.0.0.", "code": ""}
    assert BUNDLE_NAME not in status(runtime)["text"]  # never a file's name, nor a path
    assert state(runtime).get("busy") is None
    assert "probe" in [r["app_scope"] for r in state(runtime)["apps"]]
    assert runtime.registry.lists == 2  # read again after the operation


async def test_an_update_shows_the_new_version() -> None:
    _, runtime = await started()
    runtime.scripts = {
        "file.open": picked,
        "app.install": lambda r: result(
            r, output={"operation": operation("update", "probe", version="2.0.0")}
        ),
    }
    await runtime.send_surface_event("registry.install", {"action_id": "click-0001"})
    assert status(runtime)["text"] == "Updated probe 2.0.0."


async def test_closing_the_file_picker_installs_nothing_and_says_cancelled() -> None:
    _, runtime = await started()
    runtime.scripts = {"file.open": lambda r: result(r, "cancelled_by_user")}
    await runtime.send_surface_event("registry.install", {"action_id": "click-0001"})
    assert [r.capability for r in runtime.asked] == ["file.open"]
    assert status(runtime)["tone"] == "info"
    assert "cancelled" in status(runtime)["text"]
    assert state(runtime).get("busy") is None


@pytest.mark.parametrize(
    ("status_value", "code", "tone"),
    [
        ("failed", "signature_invalid", "error"),
        ("failed", "unknown_key", "error"),
        ("failed", "digest_mismatch", "error"),
        ("failed", "app_version_mismatch", "error"),
        ("permission_denied", "permission_denied", "info"),
        ("cancelled_by_user", None, "info"),
        ("expired", "operation_expired", "info"),
    ],
)
async def test_an_install_that_does_not_complete_is_shown_with_its_code(
    status_value: p.CapabilityStatusValue, code: str | None, tone: str
) -> None:
    _, runtime = await started()
    runtime.scripts = {
        "file.open": picked,
        "app.install": lambda r: result(r, status_value, code),
    }
    await runtime.send_surface_event("registry.install", {"action_id": "click-0001"})
    assert status(runtime)["tone"] == tone
    assert status(runtime)["code"] == (code or "")
    assert status(runtime)["text"].startswith("Install")


async def test_an_operation_that_ran_and_failed_is_shown_as_a_failure_with_its_code() -> None:
    _, runtime = await started()
    failed = operation("install", "probe", "failed", code="revoked")
    runtime.scripts = {
        "file.open": picked,
        "app.install": lambda r: result(r, "failed", "revoked", {"operation": failed}),
    }
    await runtime.send_surface_event("registry.install", {"action_id": "click-0001"})
    assert status(runtime)["tone"] == "error"
    assert status(runtime)["code"] == "revoked"


async def test_a_request_the_runtime_never_answers_is_a_failure_with_its_code() -> None:
    _, runtime = await started()
    runtime.refuse(p.CapabilityRequest, ErrorCode.DEADLINE_EXCEEDED)
    await runtime.send_surface_event("registry.install", {"action_id": "click-0001"})
    assert status(runtime)["tone"] == "error"
    assert status(runtime)["code"] == "deadline_exceeded"
    assert state(runtime).get("busy") is None


# ---------------------------------------------------------------------------------- manage


@pytest.mark.parametrize(
    ("operation_name", "done"),
    [
        ("enable", "Enabled probe 1.0.0."),
        ("disable", "Disabled probe 1.0.0."),
        ("rollback", "Rolled back probe 1.0.0."),
        ("remove", "Removed probe 1.0.0."),
        ("set_default", "Made the default app: probe."),
    ],
)
async def test_each_action_asks_app_manage_for_that_operation_and_app(
    operation_name: str, done: str
) -> None:
    _, runtime = await started()
    runtime.scripts = {
        "app.manage": lambda r: result(
            r, output={"operation": operation(operation_name, "probe", version="1.0.0")}
        )
    }
    await runtime.send_surface_event(
        "registry.manage",
        {"action_id": "click-0001", "operation": operation_name, "app_scope": "probe"},
    )
    (asked,) = runtime.asked
    assert asked.capability == "app.manage"
    assert asked.input == {"operation": operation_name, "app_scope": "probe"}
    assert asked.instance_id == INSTANCE
    assert "probe" in asked.purpose
    assert runtime.busy_when_asked == [f"{operation_name}:probe"]
    assert status(runtime) == {"tone": "ok", "text": done, "code": ""}
    assert runtime.registry.lists == 2


async def test_a_denied_action_is_shown_as_not_allowed_and_changes_nothing() -> None:
    _, runtime = await started()
    runtime.scripts = {"app.manage": lambda r: result(r, "permission_denied", "permission_denied")}
    await runtime.send_surface_event(
        "registry.manage",
        {"action_id": "click-0001", "operation": "disable", "app_scope": "whiteboard"},
    )
    assert status(runtime)["tone"] == "info"
    assert status(runtime)["code"] == "permission_denied"
    assert "Whiteboard" in status(runtime)["text"]  # by its title


async def test_a_refused_action_is_shown_with_the_runtime_s_code() -> None:
    _, runtime = await started()
    runtime.scripts = {"app.manage": lambda r: result(r, "failed", "no_predecessor")}
    await runtime.send_surface_event(
        "registry.manage",
        {"action_id": "click-0001", "operation": "rollback", "app_scope": "probe"},
    )
    assert status(runtime)["tone"] == "error"
    assert status(runtime)["code"] == "no_predecessor"


async def test_a_new_status_line_replaces_the_last_one_whole() -> None:
    _, runtime = await started()
    runtime.scripts = {"app.manage": lambda r: result(r, "failed", "no_predecessor")}
    click = {"action_id": "click-0001", "operation": "rollback", "app_scope": "probe"}
    await runtime.send_surface_event("registry.manage", click)
    runtime.scripts = {"app.manage": lambda r: result(r, output={})}
    await runtime.send_surface_event("registry.manage", {**click, "action_id": "click-0002"})
    assert status(runtime) == {"tone": "ok", "text": "Roll back probe: done.", "code": ""}


async def test_a_re_sent_click_is_not_asked_again() -> None:
    _, runtime = await started()
    runtime.scripts = {"app.manage": lambda r: result(r, output={})}
    click = {"action_id": "click-0001", "operation": "enable", "app_scope": "probe"}
    await runtime.send_surface_event("registry.manage", click)
    await runtime.send_surface_event("registry.manage", click)
    assert len(runtime.asked) == 1
    await runtime.send_surface_event("registry.manage", {**click, "action_id": "click-0002"})
    assert len(runtime.asked) == 2
    assert runtime.asked[0].request_id != runtime.asked[1].request_id


@pytest.mark.parametrize(
    "data",
    [
        {"operation": "enable", "app_scope": "probe"},  # no action id
        {"action_id": "x", "operation": "enable", "app_scope": "probe"},  # too short
        {"action_id": "click-0001", "operation": "revoke", "app_scope": "probe"},
        {"action_id": "click-0001", "operation": "install", "app_scope": "probe"},
        {"action_id": "click-0001", "operation": "enable", "app_scope": "../etc"},
        {"action_id": "click-0001", "operation": "enable"},
    ],
)
async def test_a_malformed_action_asks_for_nothing(data: dict[str, Any]) -> None:
    _, runtime = await started()
    await runtime.send_surface_event("registry.manage", data)
    assert runtime.asked == []


# ---------------------------------------------------------------------------------- instance


async def test_the_open_tool_opens_its_instance_and_closes_any_other() -> None:
    app, runtime = await started()
    runtime.instances.add("app-registry:call-2")
    record = await testkit.call_tool(app, "app-registry.open", {}, call_id="call-2")
    # The testkit runs the call on its default instance: open it on a second one by hand.
    assert record.result == {"opened": True}
    assert runtime.surfaces.of(INSTANCE) is not None

    other = testkit.FakeRuntime(SCOPE, "app-registry:one")
    other.instances.add("app-registry:two")
    second = AppRegistry()
    await testkit.start(second, runtime=other)
    await second.open(_call("app-registry:two", other))
    assert other.surfaces.of("app-registry:two") is not None
    assert ("app-registry:one", "close") in other.lifecycle.requests
    assert "app-registry:one" not in second.surfaces


async def test_a_surface_already_open_is_given_the_whole_state_again() -> None:
    app, runtime = await started()
    await runtime.context().surfaces.update("lu:surface:" + INSTANCE, {"busy": "install"})
    await app.on_view_refresh()
    assert state(runtime).get("busy") is None


def _call(instance_id: str, runtime: FakeRuntime) -> Any:
    from lineup.sdk.tools import ToolCall, tools_of

    spec = tools_of(AppRegistry)["app-registry.open"]
    return ToolCall(
        call_id="c-open",
        tool="app-registry.open",
        input=spec.input_model(),
        instance_id=instance_id,
        spec=spec,
        sink=runtime,
    )


# ---------------------------------------------------------------------------------- manifest


def test_the_shipped_manifest_is_the_one_the_code_declares() -> None:
    shipped = Path(registry_package.__file__).parent / "manifest.json"
    assert shipped.read_text() == manifest_json(manifest_of(AppRegistry))
    manifest = load_manifest(shipped.read_text())
    assert manifest.kind == "core"
    assert manifest.app_scope == SCOPE
    assert manifest.requested_capabilities == ("file.open", "app.install", "app.manage")
    assert manifest.host.surface_required is True
    (entry,) = manifest.entrypoints
    assert (entry.kind, entry.document, entry.events) == (
        "surface",
        "index.html",
        ("registry.refresh", "registry.install", "registry.manage"),
    )
    assert (Path(registry_package.__file__).parent / "web" / entry.document).is_file()
    # Seed 004 §2.2: no Agent tool installs, enables, disables or removes anything.
    assert [(t.method, t.handling, t.permissions) for t in manifest.tools] == [
        ("app-registry.open", "launch", ())
    ]


# ---------------------------------------------------------------------------------- available


def catalog_entry(name: str, scope: str, code: str | None = None) -> p.CatalogEntry:
    return p.CatalogEntry(
        file=name, app_scope=scope, version="1.0.0", key_id="ed25519:00aa", size=900, code=code
    )


async def test_the_local_catalog_is_listed_as_available_with_each_entry_s_status() -> None:
    app = AppRegistry()
    runtime = Runtime()
    runtime.registry.apps.append(app_info("old", version="2.0.0"))
    runtime.registry.apps.append(app_info("same"))
    runtime.registry.catalog = [
        catalog_entry("probe-1.0.0.lineup", "probe").model_copy(update={"title": "Probe It"}),
        catalog_entry("bad-1.0.0.lineup", "bad", "digest_mismatch"),
        catalog_entry("old-1.0.0.lineup", "old", "app_version_mismatch"),
        catalog_entry("same-1.0.0.lineup", "same", "app_version_mismatch"),
    ]
    await testkit.start(app, runtime=runtime)
    shown = state(runtime)["available"]
    assert [(e["app_scope"], e["installable"], e["code"]) for e in shown] == [
        ("probe", True, ""),
        ("bad", False, "digest_mismatch"),
        ("old", False, "app_version_mismatch"),
        ("same", False, "app_version_mismatch"),
    ]
    assert shown[0]["key_id"] == "ed25519:00aa" and shown[0]["version"] == "1.0.0"
    # By title: the verified bundle's, else the installed app's, else (unverified) its id.
    assert [e["title"] for e in shown] == ["Probe It", "bad", "Old", "Same"]
    assert shown[0]["details"] == "App id probe · signed by key ed25519:00aa"
    # A refusal is a sentence; the same version installed is a success, a newer one says so.
    assert [(e["reason"], e["tone"]) for e in shown[1:]] == [
        ("The app's content is not the one its publisher signed.", "error"),
        ("Version 2.0.0 is installed", "info"),
        ("Installed", "ok"),
    ]
    for entry in shown:
        assert "_" not in entry["reason"]  # never a code


async def test_each_app_reads_as_what_it_is_how_it_stands_and_its_last_change() -> None:
    app = AppRegistry()
    runtime = Runtime()
    runtime.registry.apps += [
        app_info("game", title="Draw and Guess", kind="bundled-reference", source="bundled"),
        app_info(
            "probe",
            key_id="ed25519:00aa",
            predecessor="0.9.0",
            operation=p.AppOperationInfo(**operation("update", "probe", "failed", code="revoked")),
        ),
        app_info("off", enabled=False, state="unavailable"),
    ]
    await testkit.start(app, runtime=runtime)
    rows = {r["app_scope"]: r for r in state(runtime)["apps"]}
    game, probe, off = rows["game"], rows["probe"], rows["off"]
    assert (game["title"], game["what"], game["status"]) == (
        "Draw and Guess",
        "Comes with LineUp",
        "Ready",
    )
    assert game["details"] == "App id game"
    assert (probe["what"], probe["status_tone"]) == ("Installed by you", "ok")
    assert probe["details"] == "App id probe · signed by key ed25519:00aa · can roll back to 0.9.0"
    assert probe["last"] == {
        "text": "Update failed. That version of the app has been withdrawn by its publisher.",
        "tone": "error",
        "code": "revoked",
    }
    assert (off["status"], off["status_tone"]) == ("Disabled", "off")


async def test_install_from_the_catalog_asks_app_install_of_that_catalog_file() -> None:
    app = AppRegistry()
    runtime = Runtime()
    runtime.registry.catalog = [catalog_entry("probe-1.0.0.lineup", "probe")]
    await testkit.start(app, runtime=runtime)

    def install(request: p.CapabilityRequest) -> p.CapabilityResult:
        runtime.registry.apps.append(app_info("probe"))
        runtime.registry.catalog = [
            catalog_entry("probe-1.0.0.lineup", "probe", "app_version_mismatch")
        ]
        return result(request, output={"operation": operation("install", "probe", version="1.0.0")})

    runtime.scripts = {"app.install": install}
    await runtime.send_surface_event(
        "registry.install", {"action_id": "click-0001", "catalog_file": "probe-1.0.0.lineup"}
    )
    (asked,) = runtime.asked  # no file picker
    assert (asked.capability, asked.input) == (
        "app.install",
        {"catalog_file": "probe-1.0.0.lineup"},
    )
    assert "probe 1.0.0" in asked.purpose
    assert runtime.busy_when_asked == ["install"]
    assert status(runtime) == {"tone": "ok", "text": "Installed Probe 1.0.0.", "code": ""}
    assert state(runtime)["available"][0]["installable"] is False


async def test_a_catalog_install_refused_is_shown_with_its_code() -> None:
    _, runtime = await started()
    runtime.scripts = {
        "app.install": lambda request: result(request, "failed", "digest_mismatch"),
    }
    await runtime.send_surface_event(
        "registry.install", {"action_id": "click-0001", "catalog_file": "probe-1.0.0.lineup"}
    )
    assert status(runtime)["tone"] == "error"
    assert status(runtime)["code"] == "digest_mismatch"


@pytest.mark.parametrize(
    "name", ["../probe-1.0.0.lineup", "a/probe.lineup", "probe.pub", "", 7, "x" * 250 + ".lineup"]
)
async def test_a_catalog_file_that_is_not_a_plain_catalog_name_asks_for_nothing(
    name: object,
) -> None:
    _, runtime = await started()
    runtime.scripts = {"app.install": result}
    await runtime.send_surface_event(
        "registry.install", {"action_id": "click-0001", "catalog_file": name}
    )
    assert runtime.asked == []
