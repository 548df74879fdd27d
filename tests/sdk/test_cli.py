"""`lineup app manifest`: finds the app, prints or writes its manifest, refuses in one line."""

from __future__ import annotations

import json
import os
import py_compile
import sys
import textwrap
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from lineup.sdk import load_manifest, manifest_of
from lineup.sdk.cli import main
from lineup.sdk.manifest import manifest_json

from . import _dashboard
from ._dashboard import Dashboard

EXPECTED = manifest_json(manifest_of(Dashboard))
PREFIX = "lu_cli_"

APP = """
from pydantic import BaseModel, ConfigDict, Field

from lineup.sdk import AppInfo, MiniApp, ToolCall, tool


class Ping(BaseModel):
    model_config = ConfigDict(extra="forbid")

    text: str = Field(max_length=10)


class {name}(MiniApp):
    app_info = AppInfo(app_scope="{scope}", version="2.0.0", kind="installed")

    @tool("{scope}.ping", handling="direct", input=Ping, output=Ping)
    async def ping(self, call: ToolCall[Ping]) -> Ping:
        return call.input
"""

BAD_SCHEMA = """
from pydantic import BaseModel, ConfigDict, Field

from lineup.sdk import AppInfo, MiniApp, ToolCall, tool


class Email(BaseModel):
    model_config = ConfigDict(extra="forbid")

    address: str = Field(pattern="^[^@]+@[^@]+$")


class Mailer(MiniApp):
    app_info = AppInfo(app_scope="mailer", version="1.0.0", kind="installed")

    @tool("mailer.send", handling="direct", input=Email, output=Email)
    async def send(self, call: ToolCall[Email]) -> Email:
        return call.input
"""


@pytest.fixture
def packages(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A folder on the import path; packages written there are forgotten afterwards."""
    monkeypatch.syspath_prepend(str(tmp_path))
    yield tmp_path
    for name in [n for n in sys.modules if n.startswith(PREFIX)]:
        del sys.modules[name]


def write_package(root: Path, files: dict[str, str]) -> tuple[str, Path]:
    """`root/<unique>/app/` with `files` in it; returns the package name and the app folder."""
    name = f"{PREFIX}{uuid.uuid4().hex[:8]}"
    folder = root / name / "app"
    folder.mkdir(parents=True)
    (root / name / "__init__.py").write_text("")
    for file, text in files.items():
        (folder / file).write_text(textwrap.dedent(text))
    return name, folder


def refusal(capsys: pytest.CaptureFixture[str], argv: list[str]) -> str:
    assert main(argv) == 1
    out, err = capsys.readouterr()
    assert out == ""
    assert err.count("\n") == 1
    prefix = "lineup app manifest: "
    assert err.startswith(prefix)
    return err.removeprefix(prefix).split()[0]


def test_a_dotted_module_prints_its_apps_manifest(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["manifest", _dashboard.__name__]) == 0
    out, err = capsys.readouterr()
    assert (out, err) == (EXPECTED, "")
    assert load_manifest(out) == manifest_of(Dashboard)


def test_a_module_file_inside_the_lineup_tree_prints_its_apps_manifest(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["manifest", _dashboard.__file__]) == 0
    assert capsys.readouterr().out == EXPECTED


def test_a_package_folder_prints_its_apps_manifest(
    packages: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, folder = write_package(packages, {"__init__.py": APP.format(name="Pinger", scope="pinger")})
    assert main(["manifest", str(folder)]) == 0
    manifest = load_manifest(capsys.readouterr().out)
    assert (manifest.app_scope, [t.method for t in manifest.tools]) == ("pinger", ["pinger.ping"])


def test_the_manifest_is_written_to_the_out_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "manifest.json"
    assert main(["manifest", _dashboard.__name__, "--out", str(out)]) == 0
    assert capsys.readouterr().out == ""
    assert out.read_text() == EXPECTED
    assert json.loads(out.read_text())["format"] == "lineup.app.v1"


def test_a_schema_outside_the_subset_exits_1_with_its_reason(
    packages: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, folder = write_package(packages, {"__init__.py": BAD_SCHEMA})
    assert refusal(capsys, ["manifest", str(folder)]) == "schema_keyword_unsupported"


def test_two_apps_in_one_package_need_the_class_option(
    packages: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    two = APP.format(name="One", scope="one") + APP.format(name="Two", scope="two")
    name, folder = write_package(packages, {"__init__.py": two})
    assert refusal(capsys, ["manifest", str(folder)]) == "app_ambiguous"

    assert main(["manifest", str(folder), "--class", "Two"]) == 0
    assert load_manifest(capsys.readouterr().out).app_scope == "two"
    assert main(["manifest", str(folder), "--class", f"{name}.app:One"]) == 0
    assert load_manifest(capsys.readouterr().out).app_scope == "one"


def test_a_package_without_an_app_is_refused(capsys: pytest.CaptureFixture[str]) -> None:
    chat = Path(_dashboard.__file__).parents[2] / "miniapps" / "chat"
    assert refusal(capsys, ["manifest", str(chat)]) == "app_not_found"


def test_a_class_option_naming_something_else_is_refused(
    capsys: pytest.CaptureFixture[str],
) -> None:
    argv = ["manifest", _dashboard.__name__, "--class", "OpenInput"]
    assert refusal(capsys, argv) == "app_not_found"


def test_a_path_that_does_not_exist_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert refusal(capsys, ["manifest", str(tmp_path / "nowhere")]) == "app_not_found"


def test_a_folder_that_is_not_a_package_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert refusal(capsys, ["manifest", str(tmp_path)]) == "app_not_found"


def test_a_package_outside_the_import_path_is_read_as_its_own_top_level_package(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A development app (`lineup run --dev-app PATH`) lives in any folder.
    monkeypatch.setattr(sys, "path", list(sys.path))
    (tmp_path / "loose_dev_app").mkdir()
    (tmp_path / "loose_dev_app" / "__init__.py").write_text("")
    assert refusal(capsys, ["manifest", str(tmp_path / "loose_dev_app")]) == "app_not_found"
    assert str(tmp_path) in sys.path


def test_a_module_that_fails_to_import_is_refused(
    packages: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _, folder = write_package(packages, {"__init__.py": "import lineup_no_such_module\n"})
    assert refusal(capsys, ["manifest", str(folder)]) == "app_import_failed"


def test_a_usage_error_exits_2(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["manifest"]) == 2
    assert main(["publish", "x"]) == 2
    capsys.readouterr()


def test_the_manifest_is_of_the_source_as_it_is_now_never_of_a_stale_compilation(
    packages: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # CPython trusts a .pyc whose recorded source mtime (whole seconds) and size match. An edit
    # within the second of the last import, to the same size (2.0.0 -> 2.0.1), is such a case:
    # made certain here by putting the source's times back. The catalog's build packed the old
    # version that way (fcN3's make test).
    _, folder = write_package(packages, {"__init__.py": APP.format(name="Pinger", scope="pinger")})
    source = folder / "__init__.py"
    py_compile.compile(str(source), doraise=True)
    cached = {p: p.stat().st_mtime_ns for p in folder.rglob("*.pyc")}
    times = os.stat(source)
    source.write_text(source.read_text().replace('version="2.0.0"', 'version="2.0.1"'))
    os.utime(source, ns=(times.st_atime_ns, times.st_mtime_ns))
    assert os.stat(source).st_size == times.st_size

    assert main(["manifest", str(folder)]) == 0
    assert json.loads(capsys.readouterr().out)["version"] == "2.0.1"
    assert {p: p.stat().st_mtime_ns for p in folder.rglob("*.pyc")} == cached  # none written
