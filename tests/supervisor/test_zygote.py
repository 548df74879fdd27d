"""What the zygote imports before it forks the runtime's children."""

from __future__ import annotations

import sys
from collections import deque

import pytest

from lineup.actors.kernel import load_target
from lineup.supervisor._spec import runtime_specs
from lineup.supervisor._zygote import PRELOAD, _import, _import_for


def test_the_zygote_preloads_the_module_of_every_runtime_actor() -> None:
    # Actor packages export their actor lazily, so preloading a package alone would load
    # nothing and every child would import its actor after the fork.
    for spec in runtime_specs():
        assert load_target(spec.target).__module__ in PRELOAD, spec.name


def test_a_spawn_first_imports_the_pending_preload_of_its_targets_package_alone() -> None:
    pending = deque(
        ["lineup.hostbridge._actor", "lineup.actors.store._actor", "lineup.actors.storefront"]
    )
    _import_for("lineup.actors.store:StoreActor", pending)
    assert "lineup.actors.store._actor" in sys.modules
    # Another package's entries wait their turn; a name that only starts alike is no part.
    assert list(pending) == ["lineup.hostbridge._actor", "lineup.actors.storefront"]


def test_a_preload_entry_that_fails_to_import_leaves_the_zygote_serving(
    capsys: pytest.CaptureFixture[str],
) -> None:
    _import("lineup.no_such_module")  # the child that needs it fails with its own error
    assert "ModuleNotFoundError" in capsys.readouterr().err
