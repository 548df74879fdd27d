"""The start target through real processes (seed 004 §4.3): the Shell's `ui.open` (the deep
link) opens an app in front, or brings its instance forward; an unknown app is a notice with
its code and the chat stays; at a runtime start the user's default app is in front, and a
default that cannot start leaves the chat there."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import trio

from lineup.actors.store._db import open_database
from lineup.sdk.manifest import manifest_json
from lineup.sdk.tools import manifest_of
from lineup.tests.support.probe_app import Probe
from lineup.tests.support.runtime import start_runtime
from lineup.tests.support.shell import ShellClient, connect_shell

WAIT = 20.0


def apps(shell: ShellClient) -> dict[str, Any]:
    frames = [f for f in shell.frames if f.get("type") == "shell.apps"]
    return frames[-1] if frames else {"foreground": None, "instances": []}


def front_scope(shell: ShellClient) -> str | None:
    front = apps(shell)["foreground"]
    return next(
        (i["app_scope"] for i in apps(shell)["instances"] if i["instance_id"] == front), None
    )


def instances_of(shell: ShellClient, scope: str) -> list[str]:
    return [i["instance_id"] for i in apps(shell)["instances"] if i["app_scope"] == scope]


def notices(shell: ShellClient) -> list[str]:
    return [f["text"] for f in shell.frames if f.get("type") == "shell.notice"]


def set_default_app(data_dir: Path, scope: str) -> None:
    """The user's choice as the store keeps it (the `settings` row `default_app`)."""
    db = open_database(data_dir, {})
    try:
        db.conn.execute(
            "INSERT INTO settings (name, value, updated_at) VALUES ('default_app', ?, 0)",
            (json.dumps(scope),),
        )
    finally:
        db.close()


async def test_a_deep_link_opens_the_app_in_front_and_again_brings_the_same_instance(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    runtime = await start_runtime(nursery, data_dir, demo_agent=False)
    shell = await connect_shell(nursery, runtime.shell_url)
    with trio.fail_after(WAIT):
        await shell.wait_until(lambda sh: front_scope(sh) == "chat")
        await shell.send({"type": "ui.open", "app_scope": "task-dashboard"})
        await shell.wait_until(lambda sh: front_scope(sh) == "task-dashboard")
    assert runtime.supervisor.children["miniapp:task-dashboard"].state == "running"
    (opened,) = instances_of(shell, "task-dashboard")

    with trio.fail_after(WAIT):
        await shell.send({"type": "ui.open", "app_scope": "chat"})
        await shell.wait_until(lambda sh: front_scope(sh) == "chat")
        await shell.send({"type": "ui.open", "app_scope": "task-dashboard"})
        await shell.wait_until(lambda sh: front_scope(sh) == "task-dashboard")
    assert instances_of(shell, "task-dashboard") == [opened]  # the same one, forward again
    assert notices(shell) == []


async def test_an_unknown_app_is_a_notice_with_its_code_and_the_chat_stays(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    runtime = await start_runtime(nursery, data_dir, demo_agent=False)
    shell = await connect_shell(nursery, runtime.shell_url)
    with trio.fail_after(WAIT):
        await shell.wait_until(lambda sh: front_scope(sh) == "chat")
        await shell.send({"type": "ui.open", "app_scope": "no-such-app"})
        await shell.wait_until(lambda sh: bool(notices(sh)))
    (notice,) = [f for f in shell.frames if f.get("type") == "shell.notice"]
    assert notice["code"] == "app_not_installed"  # the sentence's details line
    assert "app_not_installed" not in notice["text"]
    assert front_scope(shell) == "chat"
    assert [i["app_scope"] for i in apps(shell)["instances"]] == ["chat"]


async def test_the_default_app_is_in_front_when_the_runtime_starts(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    set_default_app(data_dir, "task-dashboard")
    runtime = await start_runtime(nursery, data_dir, demo_agent=False)
    shell = await connect_shell(nursery, runtime.shell_url)
    with trio.fail_after(WAIT):
        await shell.wait_until(lambda sh: front_scope(sh) == "task-dashboard")
    assert runtime.supervisor.children["miniapp:task-dashboard"].state == "running"
    assert len(instances_of(shell, "task-dashboard")) == 1


async def test_a_default_app_that_fails_to_start_leaves_the_chat_in_front(
    nursery: trio.Nursery, data_dir: Path
) -> None:
    # An app whose process cannot start: its code is not there (its manifest is).
    manifest = data_dir / "probe.json"
    data_dir.mkdir(parents=True, exist_ok=True)
    manifest.write_text(manifest_json(manifest_of(Probe)))
    broken = {
        "app_scope": Probe.app_info.app_scope,
        "manifest": str(manifest),
        "entry": "lineup.tests.support.no_such_module:Probe",
        "title": "Broken",
    }
    rt = data_dir / "rt"
    set_default_app(rt, Probe.app_info.app_scope)
    runtime = await start_runtime(nursery, rt, demo_agent=False, extra_apps=(broken,))
    shell = await connect_shell(nursery, runtime.shell_url)
    failed = f"miniapp:{Probe.app_info.app_scope}"
    with trio.fail_after(WAIT):
        # Its instance was launched (in front), failed, and the chat took the front back.
        await runtime.supervisor.wait_until(
            lambda: (
                failed in runtime.supervisor.children
                and not runtime.supervisor.children[failed].is_up()
            )
        )
        await shell.wait_until(
            lambda sh: (
                front_scope(sh) == "chat"
                and [i["app_scope"] for i in apps(sh)["instances"]] == ["chat"]
            )
        )
    assert notices(shell) == []
