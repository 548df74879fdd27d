"""The layout keeps protocols light: importing an actor's `messages` loads no actor (DESIGN §2).

Each check runs in a fresh interpreter, since this one has long since imported everything.
"""

from __future__ import annotations

import pytest

from lineup.tests.support.process import modules_after

PROTOCOLS = (
    "lineup.actors.store.messages",
    "lineup.actors.transport.messages",
    "lineup.actors.router.messages",
    "lineup.actors.focus.messages",
    "lineup.actors.gateway.messages",
    "lineup.hostbridge.messages",
    "lineup.hostbridge.shell_protocol",
)
# What only an actor needs: the database, the HTTP stack, and the actors themselves.
HEAVY_PACKAGES = ("apsw", "hypercorn", "starlette", "httpx", "markdown_it")
ACTOR_MODULES = (
    "lineup.actors.store._actor",
    "lineup.actors.transport._actor",
    "lineup.actors.router._actor",
    "lineup.actors.focus._actor",
    "lineup.actors.gateway._actor",
    "lineup.hostbridge._actor",
    "lineup.hostbridge._server",
)


def heavy(modules: set[str]) -> set[str]:
    return {
        name
        for name in modules
        if name.partition(".")[0] in HEAVY_PACKAGES
        or name in ACTOR_MODULES
        or name.endswith("._actor")
    }


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_importing_a_protocol_module_loads_no_actor_and_no_heavy_dependency(
    protocol: str,
) -> None:
    loaded = modules_after(f"import {protocol}")
    assert protocol in loaded
    assert heavy(loaded) == set()


def test_an_actor_package_still_exports_its_actor_on_first_use() -> None:
    # The other side of the lazy export, and proof that the check above can see a load.
    loaded = modules_after(
        "import lineup.actors.store as store\n"
        "assert 'lineup.actors.store._actor' not in sys.modules\n"
        "assert store.StoreActor.__name__ == 'StoreActor'"
    )
    assert {"apsw", "lineup.actors.store._actor"} <= heavy(loaded)


def test_an_actor_package_refuses_a_name_it_does_not_export() -> None:
    from lineup.actors import focus

    with pytest.raises(AttributeError):
        focus.NoSuchActor  # noqa: B018
