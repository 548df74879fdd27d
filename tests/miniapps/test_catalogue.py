"""The bundled apps' catalogue: what focus's registry offers and the tree keeps running."""

from __future__ import annotations

import importlib.util
import json

from lineup.facts.scopes import CHAT
from lineup.miniapps import catalogue
from lineup.tests.support.process import modules_after


def test_importing_the_catalogue_imports_no_app_code_and_no_runtime() -> None:
    loaded = {
        m for m in modules_after("import lineup.miniapps.catalogue") if m.startswith("lineup.")
    }
    assert loaded == {
        "lineup.miniapps",
        "lineup.miniapps.catalogue",
        "lineup.facts",
        "lineup.facts.scopes",
    }


def test_every_bundled_app_names_an_entry_that_exists_and_its_own_manifest() -> None:
    for app in catalogue.BUNDLED:
        module, _, cls = app.entry.partition(":")
        assert cls, app.app_scope
        assert importlib.util.find_spec(module) is not None, app.entry
        if app.manifest is not None:
            manifest = json.loads(app.manifest.read_text())
            assert manifest["app_scope"] == app.app_scope


def test_the_system_app_is_focus_s_recovery_app_and_offers_no_tools() -> None:
    assert catalogue.SYSTEM_APP in catalogue.BUNDLED
    assert catalogue.SYSTEM_APP.manifest is None
    assert catalogue.SYSTEM_APP.instance_id == CHAT
    assert catalogue.RESIDENT == (catalogue.SYSTEM_APP,)


def test_the_registry_entries_are_those_the_runtime_has_always_offered() -> None:
    entries = catalogue.registry_entries()
    assert [e["app_scope"] for e in entries] == [
        "chat",
        "task-dashboard",
        "whiteboard",
        "app-registry",
        "pomodoro",
    ]
    assert entries[0] == {
        "app_scope": "chat",
        "manifest": "",
        "entry": "lineup.miniapps.chat:Chat",
        "title": "Chat",
    }
    assert entries[1]["entry"] == "lineup.miniapps.task_dashboard:TaskDashboard"
    assert entries[1]["title"] == "Task Dashboard"
    assert entries[1]["manifest"].endswith("task_dashboard/manifest.json")
    assert entries[2]["entry"] == "lineup.miniapps.whiteboard:Whiteboard"
    assert entries[2]["manifest"].endswith("whiteboard/manifest.json")
    assert entries[3]["entry"] == "lineup.miniapps.app_registry:AppRegistry"
    assert entries[3]["manifest"].endswith("app_registry/manifest.json")
