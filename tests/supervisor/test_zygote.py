"""What the zygote imports before it forks the runtime's children."""

from __future__ import annotations

import pytest

from lineup.actors.kernel import load_target
from lineup.supervisor._spec import runtime_specs
from lineup.supervisor._zygote import PRELOAD, Preload, _import


def test_the_zygote_preloads_the_module_of_every_runtime_actor() -> None:
    # Actor packages export their actor lazily, so preloading a package alone would load
    # nothing and every child would import its actor after the fork.
    for spec in runtime_specs():
        assert load_target(spec.target).__module__ in PRELOAD, spec.name


def test_before_the_first_spawn_the_zygote_imports_its_preload_in_order() -> None:
    preload = Preload(["a", "b"])
    assert preload.idling and preload.next() == "a"
    assert preload.idling and preload.next() == "b"
    assert not preload.idling


def test_while_children_start_a_spawn_imports_its_targets_package_alone() -> None:
    preload = Preload(
        ["lineup.hostbridge._actor", "lineup.actors.store._actor", "lineup.actors.storefront"]
    )
    assert preload.for_spawn("lineup.actors.store:StoreActor") == ["lineup.actors.store._actor"]
    # Nothing else loads meanwhile: a spawn would wait behind an import it does not need.
    assert not preload.idling
    assert preload.for_spawn("lineup.sdk:MiniAppHost") == []
    # Another package's entries wait their turn; a name that only starts alike is no part.
    assert list(preload.pending) == ["lineup.hostbridge._actor", "lineup.actors.storefront"]


def test_once_the_tree_is_ready_the_zygote_imports_the_rest_in_order() -> None:
    preload = Preload(["lineup.hostbridge._actor", "lineup.sdk", "lineup.ops.agent.demo"])
    assert preload.for_spawn("lineup.sdk:MiniAppHost") == ["lineup.sdk"]
    preload.preload_all()
    assert [preload.next(), preload.next()] == ["lineup.hostbridge._actor", "lineup.ops.agent.demo"]
    assert not preload.idling


def test_a_preload_entry_that_fails_to_import_leaves_the_zygote_serving(
    capsys: pytest.CaptureFixture[str],
) -> None:
    _import("lineup.no_such_module")  # the child that needs it fails with its own error
    assert "ModuleNotFoundError" in capsys.readouterr().err
