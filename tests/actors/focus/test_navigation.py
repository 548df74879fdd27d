"""Focus's navigation rules without I/O (issue 29, item 1): which entrypoint a launch opens,
which instances an app launched (from their ids, so after any restart), and the facts focus
keeps of a launched instance. The decisions through real processes: tests/e2e/test_navigation.py.
"""

from __future__ import annotations

import pytest

from lineup.actors.focus._app_state import Lineage, launched_by
from lineup.actors.focus._navigation import _entrypoint
from lineup.actors.kernel import ErrorCode, LineUpError
from lineup.sdk.manifest import Entrypoint, Host, Manifest


def manifest(*entrypoints: Entrypoint) -> Manifest:
    return Manifest(
        format="lineup.app.v1",
        app_scope="whiteboard",
        version="1.0.0",
        kind="installed",
        host=Host(min_version="0.1.0"),
        entrypoints=entrypoints,
    )


CANVAS = Entrypoint(id="canvas", kind="contextual")
BOARD = Entrypoint(id="board", kind="surface", default_eligible=True)
FUTURE = Entrypoint(id="future", kind="surface", surface_version=2)


def test_a_launch_opens_the_named_entrypoint_else_the_default_eligible_else_the_first() -> None:
    assert _entrypoint(manifest(CANVAS, BOARD), "canvas") == CANVAS
    assert _entrypoint(manifest(CANVAS, BOARD), None) == BOARD
    assert _entrypoint(manifest(CANVAS), None) == CANVAS
    assert _entrypoint(manifest(), None) is None


@pytest.mark.parametrize(
    ("named", "code"),
    [("nope", ErrorCode.ENTRYPOINT_NOT_FOUND), ("future", ErrorCode.SURFACE_UNAVAILABLE)],
)
def test_an_undeclared_or_unshowable_entrypoint_is_refused_with_its_code(
    named: str, code: ErrorCode
) -> None:
    with pytest.raises(LineUpError) as refused:
        _entrypoint(manifest(CANVAS, FUTURE), named)
    assert refused.value.code is code


def test_an_app_launched_what_its_id_says_it_launched_and_nothing_of_its_own() -> None:
    assert launched_by("whiteboard:nav-navigator-r1", "whiteboard", "navigator")
    assert not launched_by("whiteboard:nav-other-r1", "whiteboard", "navigator")
    assert not launched_by("whiteboard:call-1", "whiteboard", "navigator")
    assert not launched_by("navigator:nav-navigator-r1", "navigator", "navigator")


def test_a_launch_keeps_its_first_facts_and_an_ended_instance_loses_them() -> None:
    lineage = Lineage()
    lineage.opened("w:1", entrypoint="board", parent="n:1")
    lineage.opened("w:1", entrypoint="other", parent="n:2")  # a retry changes nothing
    assert (lineage.of("w:1").entrypoint, lineage.of("w:1").parent_instance_id) == ("board", "n:1")
    assert lineage.reported("w:1", "degraded") and not lineage.reported("w:1", "degraded")
    assert lineage.of("w:1").health == "degraded"
    lineage.forget({"w:1"})
    assert lineage.of("w:1").entrypoint is None
