"""The SDK of seed 004 §6 through the real tree (issue 29, item 1): an app's context (§6.1), its
state view and subscription, navigation (`list_available`, `launch`, `focus`, `close`,
`open_default_app`), declarative actions (§6.2) and diagnostics, each decided by the runtime,
each refusal with its stable code. The test app (tests/support/nav_app) runs a script of SDK
calls in its tool and answers what each got; the Shell's app list and the audit confirm what
the runtime did, and that a diagnostics report's text reached neither the audit nor the logs.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any, Final

import pytest
import trio

from lineup.actors.kernel import ActorKind, AuditRecord
from lineup.sdk.manifest import manifest_json
from lineup.sdk.tools import manifest_of
from lineup.tests.support.nav_app import SECRET, NavApp
from lineup.tests.support.runtime import (
    CONVERSATION,
    Runtime,
    kill_and_wait_restarted,
    shell_and_agent,
    start_runtime,
)
from lineup.tests.support.tree import attach, audit_rows

from .test_tools import WAIT, Scene, foreground

APP: Final = Path(__file__).parents[1] / "support" / "nav_app"
NAVIGATOR: Final = "miniapp:navigator"


async def start_navigator(nursery: trio.Nursery, data_dir: Path, **options: Any) -> Runtime:
    """The runtime with the navigator beside the catalogue's apps, laid out as a development
    app: its manifest (generated from its class) beside its Surface's `web/` folder."""
    folder = data_dir / "navigator"
    shutil.copytree(APP / "web", folder / "web")
    (folder / "manifest.json").write_text(manifest_json(manifest_of(NavApp)))
    config = {
        "app_scope": NavApp.app_info.app_scope,
        "manifest": str(folder / "manifest.json"),
        "entry": f"{NavApp.__module__}:{NavApp.__qualname__}",
        "title": "Navigator",
    }
    options.setdefault("demo_agent", False)
    return await start_runtime(nursery, data_dir / "rt", extra_apps=(config,), **options)


async def navigator_scene(nursery: trio.Nursery, data_dir: Path) -> Scene:
    runtime = await start_navigator(nursery, data_dir)
    shell, agent, revision = await shell_and_agent(nursery, runtime)
    return Scene(runtime, shell, agent, revision, nursery)


async def run(s: Scene, call_id: str, **arguments: Any) -> dict[str, str]:
    """The navigator's tool, run to its result: each step's name → what it got."""
    await s.call("navigator.run", arguments, call_id)
    result = await s.agent.terminal(call_id)
    assert result["type"] == "lineup.v1.tool.result", result
    return {step["name"]: step["value"] for step in result["payload"]["result"]["steps"]}


def apps_frame(s: Scene) -> dict[str, Any]:
    return [f for f in s.shell.frames if f.get("type") == "shell.apps"][-1]


async def test_an_app_navigates_through_the_sdk_and_the_runtime_decides_every_request(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    s = await navigator_scene(nursery, data_dir)
    await s.open_dashboard("d-1", "t1", "Another app's instance")
    # The Agent heard of the dashboard before the Shell may have: the Shell's push is its own.
    with trio.fail_after(WAIT):
        await s.shell.wait_until(lambda shell: str(foreground(shell)).startswith("task-dashboard:"))
    dashboard = apps_frame(s)["foreground"]

    got = await run(s, "nav-1", mode="tour", other=dashboard)
    me = "navigator:nav-1"
    board = "whiteboard:nav-navigator-r1"
    # §6.1: the context in full, injected by the runtime.
    assert got["context"] == (
        f"kind=installed;entrypoint=None;conversation={CONVERSATION};parent=None;"
        "granted=notification.show"
    )
    # Another app's instance is not the app's to read or report on.
    assert got["context_other"] == "!app_instance_not_found"
    assert got["report_other"] == "!app_scope_mismatch"
    listed = got["available"].split(",")
    assert listed[0] == "chat:core*"  # the recovery app, the default when none is set
    assert {"navigator:installed", "task-dashboard:installed", "whiteboard:installed"} <= set(
        listed
    )
    assert got["subscribe"] == "subscribed"
    # A launch behind: a handle with its default entrypoint and its launcher; a retry finds it.
    assert got["launch_background"] == f"whiteboard|background|board|{me}"
    assert got["launch_again"] == got["launch_background"]
    assert got["no_entrypoint"] == "!entrypoint_not_found"
    assert got["no_app"] == "!app_not_installed"
    assert got["other_conversation"] == "!conversation_mismatch"
    assert got["snapshot"] == f"front=True;own=foreground;launched=whiteboard:background:board:{me}"
    # It may bring what it launched forward; then, behind, it may not launch in front.
    assert got["focus_launched"] == f"receipt:{board}"
    assert got["launch_from_behind"] == "!foreground_required"
    assert got["focus_own"] == f"receipt:{me}"
    # Another app's instance is neither focused nor closed by it; the chat is never closed.
    assert got["focus_other"] == "!app_scope_mismatch"
    assert got["close_other"] == "!app_scope_mismatch"
    assert got["close_chat"] == "!lifecycle_denied"
    # §6.2: declarative actions, answered with a receipt; no raw envelope, no speaking as the
    # user (the chat's alone), no acting on another app's instance.
    assert got["dispatch_close"] == f"receipt:{board}"
    assert got["dispatch_send_text"] == "!permission_denied"
    assert got["dispatch_envelope"] == "!invalid_arguments"
    assert got["dispatch_lifecycle_other"] == "!app_scope_mismatch"
    # The subscription was told the launched board, then its close.
    assert got["launched_seen"] == "came=True;went=True"
    # The default app (none set: the chat) comes to the front; from behind, it may not again.
    assert got["open_default"] == "chat|foreground|None|None"
    assert got["open_default_behind"] == "!foreground_required"

    with trio.fail_after(WAIT):
        await s.shell.wait_until(lambda sh: apps_frame(s)["foreground"] == "chat")
    live = {i["instance_id"] for i in apps_frame(s)["instances"]}
    assert board not in live and {me, dashboard, "chat"} <= live  # closed by its launcher only

    auditor = await attach(s.nursery, s.runtime.supervisor, ActorKind.ROUTER, "auditor")

    def denied(rows: tuple[AuditRecord, ...]) -> list[tuple[str | None, str | None]]:
        return sorted(
            (r.message_type, r.subject_id) for r in rows if r.event == "focus.scope_denied"
        )

    rows = await audit_rows(auditor, lambda rows: len(denied(rows)) >= 4, peer=NAVIGATOR)
    assert denied(rows) == [
        ("focus.sdk.actions.dispatch", dashboard),
        ("focus.sdk.apps.close", dashboard),
        ("focus.sdk.apps.focus", dashboard),
        ("focus.sdk.diagnostics.report", dashboard),
    ]


async def test_a_state_subscription_outlives_a_sigkill_of_focus(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    s = await navigator_scene(nursery, data_dir)
    assert await run(s, "watch-1", mode="watch") == {"subscribe": "subscribed"}
    await kill_and_wait_restarted(s.runtime, "focus")
    # The restarted focus knows no subscriber; the app's SDK subscribes again when focus asks it
    # to refresh its view, and hears of the board it launches next.
    got = await run(s, "see-1", mode="launch_and_see")
    assert got == {"seen": "launched"}
    board = "whiteboard:nav-navigator-see-1"
    with trio.fail_after(WAIT):
        await s.shell.wait_until(
            lambda sh: board in {i["instance_id"] for i in apps_frame(s)["instances"]}
        )


async def test_diagnostics_are_audited_by_code_only_and_bounded_in_rate(
    nursery: trio.Nursery, data_dir: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    s = await navigator_scene(nursery, data_dir)
    got = await run(s, "diag-1", mode="diagnostics")
    assert got["report"] == "receipt:navigator:diag-1"
    assert got["health_seen"] == "health=degraded"  # the app's own state view shows it
    # The first report and MAX_REPORTS - 1 more went through; the rest are refused.
    assert got["flood"] == "last=quota_exceeded;ok=19"

    auditor = await attach(s.nursery, s.runtime.supervisor, ActorKind.ROUTER, "auditor")

    def reported(rows: tuple[AuditRecord, ...]) -> list[AuditRecord]:
        return [r for r in rows if r.event.startswith("focus.app_reported_")]

    rows = await audit_rows(
        auditor,
        lambda rows: len(reported(rows)) >= 20 and any(r.code == "quota_exceeded" for r in rows),
        peer=NAVIGATOR,
    )
    degraded = [r for r in reported(rows) if r.event == "focus.app_reported_degraded"]
    assert [(r.code, r.message_type, r.subject_id) for r in degraded] == [
        ("render_slow", "focus.sdk.diagnostics.report", "navigator:diag-1")
    ]
    limited = [r for r in rows if r.code == "quota_exceeded"]
    assert {r.message_type for r in limited} == {"focus.sdk.diagnostics.report"}
    # The report's text is nowhere: not in the audit, not in the output or logs of the tree.
    every = await audit_rows(auditor, lambda rows: True)
    logged = capfd.readouterr()
    logs = "".join(f.read_text(errors="replace") for f in (data_dir / "rt").rglob("*.log"))
    for text in (repr(every), logged.out, logged.err, logs):
        assert SECRET not in text
