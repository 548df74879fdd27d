"""Focus's inventory without I/O: which tools the Agent may call, the store's key for that
content, and what is left out and why."""

from __future__ import annotations

from pathlib import Path

from lineup.actors.focus._app_book import AppBook, AppEntry
from lineup.actors.focus._capability_context import CapabilityFacts
from lineup.actors.focus._inventory import Inventory
from lineup.actors.kernel import ErrorCode
from lineup.miniapps import catalogue
from lineup.sdk import interactions
from lineup.sdk.manifest import Manifest, load_manifest


def shipped(scope: str) -> Manifest:
    [entry] = [e for e in catalogue.registry_entries() if e["app_scope"] == scope]
    return load_manifest(Path(entry["manifest"]).read_bytes())


def methods(manifest: Manifest) -> tuple[str, ...]:
    return tuple(tool.method for tool in manifest.tools)


def inventory_of(*entries: AppEntry) -> Inventory:
    book = AppBook()
    for entry in entries:
        book.put(entry)
    return Inventory(book, CapabilityFacts(None))


def test_the_tools_are_the_interactions_and_each_enabled_usable_apps() -> None:
    board, tasks = shipped("whiteboard"), shipped("task-dashboard")
    inventory = inventory_of(
        AppEntry("chat", "bundled", "Chat"),
        AppEntry("whiteboard", "bundled", "Whiteboard", manifest=board),
        AppEntry("task-dashboard", "bundled", "Tasks", manifest=tasks, enabled=False),
        AppEntry("old", "installed", "Old", manifest=tasks, refusal=ErrorCode.APP_VERSION_MISMATCH),
    )
    assert [t.method for t in inventory.tools()] == [
        *(t.method for t in interactions.TOOLS),
        *methods(board),
    ]
    reply = inventory.reply()
    assert reply.disabled_tools == methods(tasks)
    assert reply.hidden_tools == methods(tasks)  # the incompatible app's, listed, never called
    assert reply.installed == ("chat", "task-dashboard", "whiteboard")


def test_the_same_content_has_the_same_key_and_a_new_revision_is_said_once() -> None:
    book = AppBook()
    book.put(AppEntry("whiteboard", "bundled", "Whiteboard", manifest=shipped("whiteboard")))
    inventory = Inventory(book, CapabilityFacts(None))
    key = inventory.bump_id()
    assert inventory.bump_id() == key
    assert inventory.revised(3)
    assert not inventory.revised(3)
    assert inventory.reply().revision == "3"
    book.change("whiteboard", enabled=False)
    assert inventory.bump_id() != key


SEED_EXAMPLE = Path(__file__).parents[2] / "sdk" / "fixtures" / "seed_004_manifest.json"


def test_the_seeds_tool_and_lineups_read_one_way_each_in_the_inventory() -> None:
    # Seed 004 §9's manifest as written names its tool `board.create`, in app `whiteboard`.
    seed = load_manifest(SEED_EXAMPLE.read_bytes())
    tasks = shipped("task-dashboard")
    inventory = inventory_of(
        AppEntry("whiteboard", "installed", "Whiteboard", manifest=seed),
        AppEntry("task-dashboard", "bundled", "Tasks", manifest=tasks),
    )
    reply = inventory.reply()
    published = {t.id: t.published() for t in reply.tools}
    board = published["whiteboard/board.create"]
    assert (board["app_scope"], board["method"], board["contract_version"]) == (
        "whiteboard",
        "board.create",
        "1",
    )
    opened = published["task-dashboard.open"]
    assert (opened["app_scope"], opened["method"]) == ("task-dashboard", "task-dashboard.open")
    assert reply.tool("whiteboard/board.create") is not None
    assert reply.tool("board.create") is None  # a bare method is no id: no app would own it

    book_off = inventory_of(
        AppEntry("whiteboard", "installed", "Whiteboard", manifest=seed, enabled=False)
    )
    assert book_off.reply().disabled_tools == ("whiteboard/board.create",)


def test_a_tool_only_its_apps_surface_may_call_is_never_in_the_agents_inventory() -> None:
    data = shipped("whiteboard").model_dump(mode="json")
    data["entrypoints"] = [*data["entrypoints"], {"id": "page", "kind": "surface"}]
    first, second, *_ = data["tools"]
    first["ui"] = {"entrypoint": "page", "visibility": ["app"]}
    second["ui"] = {"entrypoint": "page", "visibility": ["model", "app"]}
    board = load_manifest(data)
    inventory = inventory_of(AppEntry("whiteboard", "bundled", "Whiteboard", manifest=board))
    listed = [t.method for t in inventory.tools()]
    assert first["method"] not in listed
    assert second["method"] in listed
    disabled = inventory_of(
        AppEntry("whiteboard", "bundled", "Whiteboard", manifest=board, enabled=False)
    )
    assert first["method"] not in disabled.reply().disabled_tools
