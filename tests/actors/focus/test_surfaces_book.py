"""Focus's Surface bookkeeping (`actors/focus/_surfaces.py`): names, the merge patch, the
open/update/close table, owners, entrypoints and bounds — pure, no actor."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lineup.actors.focus._surfaces import (
    VIEW_KIND,
    SurfaceBook,
    merge_patch,
    surface_entrypoint,
    surface_id_of,
)
from lineup.actors.kernel import ErrorCode, LineUpError
from lineup.sdk import protocol as p
from lineup.sdk.manifest import Entrypoint, Host, Manifest

BOARD = Entrypoint(id="board", kind="surface", events=("board.patch",))


def manifest(*entrypoints: Entrypoint) -> Manifest:
    return Manifest(
        format="lineup.app.v1",
        app_scope="surf",
        version="1",
        kind="bundled-reference",
        entrypoints=entrypoints,
        host=Host(min_version="0.1.0"),
    )


def code_of(fn: Any, *args: Any, **kwargs: Any) -> ErrorCode | None:
    try:
        fn(*args, **kwargs)
    except LineUpError as exc:
        return exc.code
    return None


def opened(book: SurfaceBook, state: dict[str, Any] | None = None) -> Any:
    return book.open("surf", "surf:c1", BOARD, label="Surf", state=state or {}, tool_input=None)


def test_a_surface_is_named_after_its_instance_the_same_every_time() -> None:
    assert surface_id_of("surf:c1") == "lu:surface:surf:c1"
    surface, changed = opened(SurfaceBook())
    assert changed and surface.surface_id == surface_id_of("surf:c1")


def test_merge_patch_follows_rfc_7396() -> None:
    # The RFC's own example (appendix A, abridged).
    target = {"a": "b", "c": {"d": "e", "f": "g"}, "keep": [1, 2]}
    patch = {"a": "z", "c": {"f": None}, "keep": [3], "new": {"x": 1}}
    assert merge_patch(target, patch) == {"a": "z", "c": {"d": "e"}, "keep": [3], "new": {"x": 1}}
    assert target["c"] == {"d": "e", "f": "g"}  # not changed in place
    assert merge_patch({"a": 1}, {}) == {"a": 1}


json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-10, 10) | st.text(max_size=3),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=2), inner, max_size=3)
    ),
    max_leaves=10,
)


@given(st.dictionaries(st.text(max_size=2), json_values, max_size=4))
def test_a_patch_that_is_a_whole_document_without_nulls_then_applied_twice_changes_nothing_more(
    patch: dict[str, Any],
) -> None:
    once = merge_patch({"old": 1}, patch)
    assert merge_patch(once, patch) == once  # merge patches are idempotent


def test_opening_again_returns_the_open_surface_unchanged_with_its_state() -> None:
    book = SurfaceBook()
    opened(book, {"n": 1})
    book.update("surf", surface_id_of("surf:c1"), {"n": 2}, None)
    again, changed = opened(book, {"n": 99})
    assert not changed
    assert (again.state, again.state_revision) == ({"n": 2}, 1)


def test_each_update_is_one_revision_on_and_the_view_is_focus_made() -> None:
    book = SurfaceBook()
    opened(book, {"a": 1})
    sid = surface_id_of("surf:c1")
    book.update("surf", sid, {"b": 2}, None)
    surface = book.update("surf", sid, {"a": None}, {"ok": True})
    assert surface.state_revision == 2
    assert surface.view() == {
        "kind": VIEW_KIND,
        "surface_id": sid,
        "entrypoint": "board",
        "surface_version": 1,
        "label": "Surf",
        "state": {"b": 2},
        "state_revision": 2,
        "tool_result": {"ok": True},
    }
    # A later patch without a tool result keeps the last one.
    assert book.update("surf", sid, {}, None).tool_result == {"ok": True}


def test_close_then_close_again_is_unchanged_and_reopening_goes_on_from_its_revision() -> None:
    book = SurfaceBook()
    opened(book)
    sid = surface_id_of("surf:c1")
    book.update("surf", sid, {"x": 1}, None)
    _, changed = book.close("surf", sid)
    assert changed
    _, changed = book.close("surf", sid)
    assert not changed
    assert book.of("surf:c1") is None
    assert code_of(book.update, "surf", sid, {}, None) is ErrorCode.SURFACE_NOT_FOUND
    surface, changed = opened(book)
    assert changed and surface.state_revision == 2 and surface.state == {}


def test_another_apps_surface_is_not_found_for_update_and_close() -> None:
    book = SurfaceBook()
    opened(book)
    sid = surface_id_of("surf:c1")
    assert code_of(book.update, "other", sid, {}, None) is ErrorCode.SURFACE_NOT_FOUND
    assert code_of(book.close, "other", sid) is ErrorCode.SURFACE_NOT_FOUND
    assert code_of(book.close, "surf", "surf:c1") is ErrorCode.SURFACE_NOT_FOUND  # not a name
    assert book.of("surf:c1") is not None


def test_state_over_the_bound_is_refused_and_a_patch_that_would_pass_it_changes_nothing() -> None:
    big = "x" * (p.MAX_SURFACE_STATE_BYTES // 2)
    book = SurfaceBook()
    assert code_of(opened, book, {"a": big, "b": big}) is ErrorCode.ENVELOPE_TOO_LARGE
    assert book.of("surf:c1") is None
    opened(book, {"a": big})
    sid = surface_id_of("surf:c1")
    assert code_of(book.update, "surf", sid, {"b": big}, None) is ErrorCode.ENVELOPE_TOO_LARGE
    surface = book.of("surf:c1")
    assert surface is not None and surface.state_revision == 0 and "b" not in surface.state


def test_the_entrypoint_is_the_named_surface_one_or_the_first_and_its_version_must_run() -> None:
    other = Entrypoint(id="chat", kind="command")
    second = Entrypoint(id="second", kind="surface")
    newer = Entrypoint(id="newer", kind="surface", surface_version=2)
    apps = manifest(other, BOARD, second, newer)
    assert surface_entrypoint(apps, None) == BOARD
    assert surface_entrypoint(apps, "second") == second
    unavailable = ErrorCode.SURFACE_UNAVAILABLE
    assert code_of(surface_entrypoint, apps, "newer") is unavailable
    assert code_of(surface_entrypoint, apps, "chat") is unavailable  # not a surface one
    assert code_of(surface_entrypoint, apps, "missing") is unavailable
    assert code_of(surface_entrypoint, manifest(other), None) is unavailable
    assert code_of(surface_entrypoint, None, None) is unavailable


@pytest.mark.parametrize(
    ("name", "data", "code"),
    [
        ("board.patch", {"ops": [1]}, None),
        ("board.submit", {}, ErrorCode.BRIDGE_METHOD_UNKNOWN),
        ("board.patch", {"x": "y" * p.MAX_SURFACE_EVENT_BYTES}, ErrorCode.BRIDGE_MESSAGE_TOO_LARGE),
    ],
)
def test_an_event_must_be_declared_and_within_its_bound(
    name: str, data: dict[str, Any], code: ErrorCode | None
) -> None:
    surface, _ = opened(SurfaceBook())
    assert code_of(surface.check_event, name, data) is code


def test_dropping_an_instance_forgets_its_open_and_closed_surfaces() -> None:
    book = SurfaceBook()
    opened(book)
    assert book.drop("surf:c1") is not None
    assert book.drop("surf:c1") is None
    surface, _ = opened(book)
    assert surface.state_revision == 0


# ---------------------------------------------------------------- a call the runtime shows


def show(book: SurfaceBook, call_id: str, tool_input: dict[str, Any] | None = None) -> Any:
    return book.show_call(
        "surf",
        "surf:c1",
        BOARD,
        label="Surf",
        tool_input=tool_input or {"q": call_id},
        tool_info={"id": call_id, "tool": {"name": "surf.show"}},
    )


def test_a_call_opens_the_instances_surface_with_its_input_and_its_tool_info() -> None:
    book = SurfaceBook()
    surface, opened_now = show(book, "c-1")
    assert opened_now
    view = surface.view()
    assert (view["state"], view["tool_input"], view["tool_info"]["id"]) == ({}, {"q": "c-1"}, "c-1")
    assert "call_result" not in view and "call_cancelled" not in view


def test_a_new_call_on_an_open_surface_replaces_the_last_ones_input_and_outcome() -> None:
    book = SurfaceBook()
    opened(book, {"kept": True})
    show(book, "c-1")
    assert book.end_call("surf:c1", "c-1", result={"isError": False}) is not None
    surface, opened_now = show(book, "c-2")
    assert not opened_now
    view = surface.view()
    assert (view["state"], view["state_revision"]) == ({"kept": True}, 0)
    assert view["tool_info"]["id"] == "c-2" and "call_result" not in view


def test_a_calls_outcome_is_shown_once_and_only_for_the_call_the_surface_shows() -> None:
    book = SurfaceBook()
    show(book, "c-1")
    assert book.end_call("surf:c1", "c-other", cancelled="operation_expired") is None
    ended = book.end_call("surf:c1", "c-1", cancelled="app_closed")
    assert ended is not None and ended.view()["call_cancelled"] == "app_closed"
    assert book.end_call("surf:c1", "c-1", result={"isError": False}) is None  # decided once
    assert book.end_call("surf:c2", "c-1", cancelled="app_closed") is None  # no Surface open


def test_a_call_whose_input_is_over_the_surfaces_bound_opens_nothing() -> None:
    book = SurfaceBook()
    big = {"x": "a" * (p.MAX_SURFACE_STATE_BYTES + 1)}
    assert code_of(show, book, "c-1", big) is ErrorCode.ENVELOPE_TOO_LARGE
    assert book.of("surf:c1") is None
