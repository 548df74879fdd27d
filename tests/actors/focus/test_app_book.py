"""Focus's apps without I/O: one entry per app, replaced whole, and what focus asks of them."""

from __future__ import annotations

from pathlib import Path

from lineup.actors.focus._app_book import AppBook, AppEntry
from lineup.actors.kernel import ErrorCode
from lineup.miniapps import catalogue
from lineup.sdk.manifest import Manifest, load_manifest


def shipped(scope: str) -> Manifest:
    [entry] = [e for e in catalogue.registry_entries() if e["app_scope"] == scope]
    return load_manifest(Path(entry["manifest"]).read_bytes())


def book_of(*entries: AppEntry) -> AppBook:
    book = AppBook()
    for entry in entries:
        book.put(entry)
    return book


def test_a_configured_app_is_shipped_or_in_development_as_its_entry_says() -> None:
    dev = {"app_scope": "probe", "manifest": "/p/manifest.json", "entry": "p:P", "dev": "true"}
    assert AppEntry.configured(dev) == AppEntry(
        scope="probe",
        source="dev",
        title="probe",  # no title: its scope
        entry="p:P",
        manifest_file="/p/manifest.json",
    )
    assert AppEntry.configured({"app_scope": "chat", "title": "Chat"}).source == "bundled"


def test_only_usable_apps_give_their_manifests_and_refused_ones_are_hidden() -> None:
    board, tasks = shipped("whiteboard"), shipped("task-dashboard")
    book = book_of(
        AppEntry("chat", "bundled", "Chat"),  # no manifest: no tools
        AppEntry("whiteboard", "bundled", "Whiteboard", manifest=board),
        AppEntry(
            "task-dashboard",
            "installed",
            "Tasks",
            manifest=tasks,
            refusal=ErrorCode.APP_VERSION_MISMATCH,
        ),
        AppEntry("broken", "installed", "broken", refusal=ErrorCode.APP_UNAVAILABLE),
    )
    assert book.manifests() == {"whiteboard": board}
    assert book.manifest("task-dashboard") is None
    assert book.hidden() == {"task-dashboard": tasks}
    assert book.refusal("task-dashboard") is ErrorCode.APP_VERSION_MISMATCH
    assert book.refusal("whiteboard") is None
    assert book.refusal("nobody") is None


def test_a_change_replaces_the_entry_whole_and_a_reader_keeps_what_it_read() -> None:
    book = book_of(AppEntry("whiteboard", "bundled", "Whiteboard", manifest=shipped("whiteboard")))
    before = book.get("whiteboard")
    after = book.change("whiteboard", enabled=False)
    assert before is not None
    assert before.enabled
    assert not after.enabled
    assert book.get("whiteboard") is after
    assert not book.enabled("whiteboard")
    assert book.manifests() == {"whiteboard": after.manifest}  # disabled is still usable


def test_an_unknown_app_has_defaults_and_a_dropped_one_is_gone() -> None:
    book = book_of(AppEntry("whiteboard", "bundled", "Whiteboard"))
    assert book.title("nobody") == "nobody"
    assert book.title("nobody", "Someone") == "Someone"
    assert book.enabled("nobody")
    assert book.installed("nobody") is None
    book.drop("whiteboard")
    assert "whiteboard" not in book
    assert list(book) == []
