"""`lineup app new`: the package it writes passes its own test, `lineup app manifest` accepts
it, it packs as an installed bundle, it keeps to its line targets, and a bad NAME or a folder
that is there already is refused in one line, writing nothing.

Each variant (a `card` view, a Surface) is generated once per module, by the `lineup` CLI's own
`main` in this process (`support/cli.py`; `test_bundle_cli.py` runs the family as a process of
its own); its own test runs in a process of its own, as its author would run it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Final

import pytest

from lineup import __version__
from lineup.sdk.bundle import PublicKey, verify_bundle
from lineup.sdk.cli import main
from lineup.sdk.manifest import SURFACE_CLIENT_URL

from .test_bundle_cli import lineup_app

NAME: Final = "hello-world"
PACKAGE: Final = "hello_world"
MAX_APP_LINES: Final = 40
MAX_TEST_LINES: Final = 15
FILES: Final = {
    "card": {"__init__.py", "test_app.py", "manifest.json", "README.md"},
    "surface": {
        "__init__.py",
        "test_app.py",
        "manifest.json",
        "README.md",
        "web/index.html",
        "web/app.js",
    },
}
RUFF: Final = Path(sys.executable).with_name("ruff")
REPO: Final = Path(__file__).resolve().parents[2]


def refused(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    """`lineup app new ...` in this process: its one line on stderr, once it exited 1."""
    assert main(["new", *args]) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1
    return err


def run(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv, cwd=cwd, capture_output=True, text=True, timeout=60, env=os.environ, check=False
    )


@pytest.fixture(scope="module", params=["card", "surface"])
def made(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The package `lineup app new hello-world [--surface]` wrote (under its own temp dir)."""
    root = tmp_path_factory.mktemp(request.param)
    flags = ["--surface"] if request.param == "surface" else []
    result = lineup_app(root, "new", NAME, *flags, "--dir", "apps")
    assert result.returncode == 0, result.stderr
    folder = root / "apps" / PACKAGE
    assert f"wrote {Path('apps') / PACKAGE / '__init__.py'}" in result.stdout
    assert f"lineup run --dev-app {PACKAGE}" in result.stdout
    # `lineup app new` imports the package it wrote to make its manifest: Python's bytecode
    # cache (written unless PYTHONDONTWRITEBYTECODE is set) is not among what it wrote.
    written = {
        str(p.relative_to(folder))
        for p in folder.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }
    assert written == FILES[request.param]
    return folder


def test_the_package_passes_its_own_test_as_generated(made: Path) -> None:
    result = run(made.parent, sys.executable, "-m", "pytest", "-q", "-W", "error", PACKAGE)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "1 passed" in result.stdout


def test_lineup_app_manifest_accepts_it_and_gives_the_manifest_written(made: Path) -> None:
    result = lineup_app(made.parent, "manifest", PACKAGE)
    assert result.returncode == 0, result.stderr
    assert result.stdout == (made / "manifest.json").read_text()
    manifest = json.loads(result.stdout)
    assert (manifest["app_scope"], manifest["version"], manifest["kind"]) == (
        NAME,
        "0.1.0",
        "installed",
    )
    assert [t["method"] for t in manifest["tools"]] == [f"{NAME}.hello"]


def test_it_packs_as_an_installed_bundle_that_verifies(made: Path) -> None:
    work = made.parent
    assert lineup_app(work, "keygen", "--out", "key").returncode == 0
    packed = lineup_app(work, "pack", PACKAGE, "--key", "key", "--out", "hello.lineup")
    assert packed.returncode == 0, packed.stderr
    public = PublicKey.loads((work / "key.pub").read_text())
    bundle = verify_bundle(
        (work / "hello.lineup").read_bytes(),
        trusted={public.key_id: public.key},
        host_version=__version__,
    )
    assert (bundle.manifest.kind, bundle.package) == ("installed", PACKAGE)
    assert {"__init__.py", "manifest.json"} <= set(bundle.files)


def test_the_app_is_at_most_40_lines_and_its_test_at_most_15(made: Path) -> None:
    app = (made / "__init__.py").read_text().splitlines()
    test = (made / "test_app.py").read_text().splitlines()
    print(f"{made.parent.parent.name}: __init__.py {len(app)} lines, test_app.py {len(test)}")
    assert len(app) <= MAX_APP_LINES
    assert len(test) <= MAX_TEST_LINES


def test_the_generated_python_is_clean_under_the_repositorys_ruff(made: Path) -> None:
    config = str(REPO / "pyproject.toml")
    lint = run(made, str(RUFF), "check", "--config", config, "--no-cache", ".")
    assert lint.returncode == 0, lint.stdout
    formatted = run(made, str(RUFF), "format", "--check", "--config", config, "--no-cache", ".")
    assert formatted.returncode == 0, formatted.stdout


def test_a_surface_loads_the_bridge_client_the_runtime_serves_before_its_own_script(
    made: Path,
) -> None:
    page = made / "web" / "index.html"
    if not page.exists():
        assert json.loads((made / "manifest.json").read_text())["entrypoints"] == []
        return
    html = page.read_text()
    assert html.index(f'<script src="{SURFACE_CLIENT_URL}">') < html.index('<script src="app.js">')
    assert "innerHTML" not in (made / "web" / "app.js").read_text()
    (entry,) = json.loads((made / "manifest.json").read_text())["entrypoints"]
    assert (entry["kind"], entry["document"], entry["events"]) == (
        "surface",
        "index.html",
        ["wave"],
    )


@pytest.mark.parametrize(
    "name", ["Hello", "hello_world", "9lives", "a.b", "hello world", "é", "x" * 64, "class", ""]
)
def test_a_name_that_is_no_app_scope_is_refused_in_one_line_writing_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    err = refused(capsys, name, "--dir", str(tmp_path))
    assert err.startswith("lineup app new: name_invalid ")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize("name", ["json", "lineup", "pytest"])
def test_a_name_that_would_shadow_a_module_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str
) -> None:
    err = refused(capsys, name, "--dir", str(tmp_path))
    assert err.startswith("lineup app new: name_taken ")
    assert list(tmp_path.iterdir()) == []


def test_a_folder_that_is_there_already_is_refused_and_kept_as_it_was(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / PACKAGE).mkdir()
    (tmp_path / PACKAGE / "mine.txt").write_text("mine")
    err = refused(capsys, NAME, "--dir", str(tmp_path))
    assert err.startswith("lineup app new: exists ")
    assert [p.name for p in (tmp_path / PACKAGE).iterdir()] == ["mine.txt"]


def test_a_package_that_cannot_be_written_leaves_nothing_behind(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "apps").write_text("a file, not a folder")
    for where in ("apps", "apps/deeper"):
        err = refused(capsys, NAME, "--dir", str(tmp_path / where))
        assert err.startswith("lineup app new: output_not_written ")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["apps"]


def test_the_templates_are_no_code_for_pytest_ruff_or_mypy_to_find() -> None:
    templates = REPO / "sdk" / "templates"
    found = [p for p in templates.rglob("*") if p.is_file()]
    assert found
    assert all(p.suffix == ".tmpl" for p in found)


def test_two_packages_of_one_name_made_in_one_process_each_get_their_own_manifest(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["new", NAME, "--dir", str(tmp_path / "a")]) == 0
    assert main(["new", NAME, "--surface", "--dir", str(tmp_path / "b")]) == 0
    capsys.readouterr()
    card_app, surface_app = (
        json.loads((tmp_path / where / PACKAGE / "manifest.json").read_text())
        for where in ("a", "b")
    )
    assert card_app["entrypoints"] == []
    assert [e["kind"] for e in surface_app["entrypoints"]] == ["surface"]
    assert PACKAGE not in sys.modules  # loaded under a private name, never as `hello_world`
