"""Focus's registry: which apps it offers, from the catalogue and from its configuration, and
which the Shell's launcher offers the user."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

from lineup.actors.focus import FocusActor
from lineup.actors.focus._app_book import AppEntry
from lineup.actors.kernel import ActorContext, ActorKind, Bus, ErrorCode, Identity
from lineup.miniapps import catalogue
from lineup.sdk.manifest import load_manifest

PROBE = {"app_scope": "probe", "manifest": "/m.json", "entry": "probe:Probe", "title": "Probe"}


def focus(config: dict[str, Any]) -> FocusActor:
    # Construction reads the configuration and opens nothing: no bus traffic, no store.
    ctx = ActorContext(
        Identity(ActorKind.FOCUS, "focus"), 1, Path("/nonexistent"), config, cast(Bus, None)
    )
    return FocusActor(ctx)


def test_focus_offers_the_bundled_apps_then_the_configured_ones() -> None:
    offered = focus({"apps": [PROBE]}).book
    assert [app.scope for app in offered] == [*(a.app_scope for a in catalogue.BUNDLED), "probe"]
    assert offered.get("chat") == AppEntry.configured(catalogue.SYSTEM_APP.registry_entry())
    assert offered.get("probe") == AppEntry.configured(PROBE)


def test_a_configured_app_replaces_a_bundled_one_of_the_same_scope() -> None:
    mine = {**PROBE, "app_scope": "task-dashboard"}
    assert focus({"apps": [mine]}).book.get("task-dashboard") == AppEntry.configured(mine)


def test_focus_told_to_leave_the_bundled_apps_out_offers_only_the_configured_ones() -> None:
    offered = focus({"apps": [PROBE], "bundled_apps": False}).book
    assert [app.scope for app in offered] == ["probe"]


def test_the_launcher_offers_each_enabled_usable_app_but_the_chat_by_title() -> None:
    actor = focus({})
    for entry in catalogue.registry_entries():
        if entry["app_scope"] != "chat":
            actor.book.change(
                entry["app_scope"], manifest=load_manifest(Path(entry["manifest"]).read_bytes())
            )
    offered = [(app.app_scope, app.title) for app in actor.access.app_list().launchable]
    assert offered == [
        ("app-registry", "App Registry"),
        ("pomodoro", "Pomodoro"),
        ("task-dashboard", "Task Dashboard"),
        ("whiteboard", "Whiteboard"),
    ]
    actor.book.change("task-dashboard", enabled=False)  # disabled: not offered
    actor.book.change("app-registry", refusal=ErrorCode.APP_UNAVAILABLE)  # cannot run here
    offered = [(app.app_scope, app.title) for app in actor.access.app_list().launchable]
    assert offered == [("pomodoro", "Pomodoro"), ("whiteboard", "Whiteboard")]


def test_the_routers_index_is_the_stack_without_the_apps_focus_would_refuse() -> None:
    actor = focus({})
    for scope in ("pomodoro", "whiteboard"):
        entry = next(e for e in catalogue.registry_entries() if e["app_scope"] == scope)
        actor.book.change(scope, manifest=load_manifest(Path(entry["manifest"]).read_bytes()))
    actor.instances.recover([], [], runtime_restarted=False)
    actor.instances.launch("pomodoro:1", "pomodoro", foreground=False, call_id="c1")
    actor.instances.launch("whiteboard:1", "whiteboard", foreground=True, call_id="c2")
    first = actor.access.index()
    listed = [(i.instance_id, i.app_scope, i.state) for i in first.instances]
    assert listed == actor.instances.stack()  # bottom first, as focus's lookup reads it
    assert listed[-1] == ("whiteboard:1", "whiteboard", "starting")
    assert {i for i, _, _ in listed} == {"chat", "pomodoro:1", "whiteboard:1"}
    actor.book.change("pomodoro", enabled=False)  # the router asks focus, which refuses it
    second = actor.access.index()
    assert [i.instance_id for i in second.instances] == [
        i for i, _, _ in listed if i != "pomodoro:1"
    ]
    assert second.version > first.version  # the router keeps the newest of those told
