"""What the zygote imports before it forks the runtime's children."""

from __future__ import annotations

from lineup.actors.kernel import load_target
from lineup.supervisor._spec import runtime_specs
from lineup.supervisor._zygote import PRELOAD


def test_the_zygote_preloads_the_module_of_every_runtime_actor() -> None:
    # Actor packages export their actor lazily, so preloading a package alone would load
    # nothing and every child would import its actor after the fork.
    for spec in runtime_specs():
        assert load_target(spec.target).__module__ in PRELOAD, spec.name
