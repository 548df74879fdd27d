"""The dev folder watcher's pure parts: what a walk sees (stat only, editor and tool files left
out), which registry entries are development apps, and how a refusal of the manifest CLI
becomes the terminal's one line. The watcher itself runs in tests/e2e/test_dev_reload.py."""

from __future__ import annotations

import os
from pathlib import Path

from lineup.actors.kernel import ActorKind
from lineup.ops.devwatch import (
    MAX_FILES,
    DevApp,
    _refusal_of,
    _write_if_changed,
    dev_apps_of,
    refusal_line,
    snapshot,
)
from lineup.supervisor._runtime import RuntimeOptions, plan_runtime


def app_folder(tmp_path: Path) -> Path:
    folder = tmp_path / "hello_dev"
    (folder / "web").mkdir(parents=True)
    (folder / "__init__.py").write_text("x = 1\n")
    (folder / "web" / "index.html").write_text("<p>hi</p>")
    (folder / "manifest.json").write_text("{}")
    return folder


def test_a_walk_sees_the_apps_files_and_leaves_out_what_tools_and_editors_write(
    tmp_path: Path,
) -> None:
    folder = app_folder(tmp_path)
    (folder / "__pycache__").mkdir()
    (folder / "__pycache__" / "x.cpython-311.pyc").write_bytes(b"\0")
    (folder / "web" / "node_modules").mkdir()
    (folder / "web" / "node_modules" / "dep.js").write_text("")
    for junk in (".__init__.py.swp", "__init__.py~", "#__init__.py#", ".#__init__.py", "4913"):
        (folder / junk).write_text("")
    (folder / ".manifest.json.1.tmp").write_text("")
    (folder / "web" / "manifest.json").write_text("{}")  # only the app's own is left out
    assert set(snapshot(folder)) == {"__init__.py", "web/index.html", "web/manifest.json"}


def test_an_edit_a_new_file_and_a_removal_each_change_the_snapshot(tmp_path: Path) -> None:
    folder = app_folder(tmp_path)
    before = snapshot(folder)
    assert snapshot(folder) == before  # nothing changed, nothing seen
    (folder / "__init__.py").write_text("x = 22\n")
    edited = snapshot(folder)
    assert edited != before
    (folder / "extra.py").write_text("")
    added = snapshot(folder)
    assert set(added) - set(edited) == {"extra.py"}
    (folder / "extra.py").unlink()
    assert snapshot(folder) == edited
    # Same size, same mtime, another file renamed over it (an editor's atomic save).
    stat = os.stat(folder / "__init__.py")
    (folder / "new").write_text("x = 33\n")
    os.utime(folder / "new", ns=(stat.st_atime_ns, stat.st_mtime_ns))
    os.replace(folder / "new", folder / "__init__.py")
    assert snapshot(folder) != edited


def test_a_walk_is_bounded_and_a_missing_folder_is_empty(tmp_path: Path) -> None:
    folder = tmp_path / "big"
    folder.mkdir()
    for i in range(MAX_FILES + 10):
        (folder / f"f{i}").touch()
    assert len(snapshot(folder)) == MAX_FILES
    assert snapshot(tmp_path / "gone") == {}


def test_the_watched_apps_are_the_plans_development_apps(tmp_path: Path) -> None:
    folder = app_folder(tmp_path)
    (folder / "manifest.json").write_text(
        '{"format": "lineup.app.v1", "app_scope": "hello", "version": "1", "kind": "installed",'
        ' "host": {"min_version": "0.1.0"}}'
    )
    plan = plan_runtime(RuntimeOptions(data_dir=tmp_path / "rt", dev_apps=(folder,)))
    watcher = next(spec for spec in plan.specs if spec.name == "devwatch")
    assert (watcher.kind, watcher.target) == (ActorKind.DEV, "lineup.ops.devwatch:DevWatchActor")
    assert not watcher.before_ready  # started once the tree is ready: focus answers it
    assert dev_apps_of(watcher.config) == [DevApp("hello", folder.resolve())]
    # No development app, no watcher.
    plain = plan_runtime(RuntimeOptions(data_dir=tmp_path / "rt2"))
    assert "devwatch" not in {spec.name for spec in plain.specs}


def test_a_refusal_is_one_line_naming_the_folder_the_reason_and_where() -> None:
    stderr = b"Traceback...\nlineup app manifest: app_import_failed hello_dev: NameError x\n"
    refused = _refusal_of(stderr, 1)
    assert (refused.reason, refused.where) == ("app_import_failed", "hello_dev: NameError x")
    crashed = _refusal_of(b"Segmentation fault\n", -11)
    assert (crashed.reason, crashed.where) == ("manifest_failed", "exit status -11")
    line = refusal_line(Path("/a/b"), "tool_id_not_scoped", "/tools/0/method\nmore")
    assert line == "lineup: dev app /a/b: tool_id_not_scoped /tools/0/method more"
    assert refusal_line(Path("/a"), "manifest_timeout") == "lineup: dev app /a: manifest_timeout"


def test_the_manifest_is_replaced_only_when_it_changed(tmp_path: Path) -> None:
    path = tmp_path / "manifest.json"
    path.write_text("one")
    inode = path.stat().st_ino
    _write_if_changed(path, "one")
    assert path.stat().st_ino == inode  # untouched
    _write_if_changed(path, "two")
    assert path.read_text() == "two"
    assert path.stat().st_ino != inode  # renamed over it: a reader never sees a part
    assert sorted(p.name for p in tmp_path.iterdir()) == ["manifest.json"]
