"""Focus's registry: which apps it offers, from the catalogue and from its configuration."""

from __future__ import annotations

from pathlib import Path
from typing import Any, cast

from lineup.actors.focus import FocusActor
from lineup.actors.kernel import ActorContext, ActorKind, Bus, Identity
from lineup.miniapps import catalogue

PROBE = {"app_scope": "probe", "manifest": "/m.json", "entry": "probe:Probe", "title": "Probe"}


def focus(config: dict[str, Any]) -> FocusActor:
    # Construction reads the configuration and opens nothing: no bus traffic, no store.
    ctx = ActorContext(
        Identity(ActorKind.FOCUS, "focus"), 1, Path("/nonexistent"), config, cast(Bus, None)
    )
    return FocusActor(ctx)


def test_focus_offers_the_bundled_apps_then_the_configured_ones() -> None:
    offered = focus({"apps": [PROBE]})._bundled
    assert list(offered) == [*(a.app_scope for a in catalogue.BUNDLED), "probe"]
    assert offered["chat"] == catalogue.SYSTEM_APP.registry_entry()
    assert offered["probe"] == PROBE


def test_a_configured_app_replaces_a_bundled_one_of_the_same_scope() -> None:
    mine = {**PROBE, "app_scope": "task-dashboard"}
    assert focus({"apps": [mine]})._bundled["task-dashboard"] == mine


def test_focus_told_to_leave_the_bundled_apps_out_offers_only_the_configured_ones() -> None:
    assert list(focus({"apps": [PROBE], "bundled_apps": False})._bundled) == ["probe"]
