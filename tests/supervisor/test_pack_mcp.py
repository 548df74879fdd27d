"""`lineup app pack-mcp`'s refusals, each one line with a stable reason: a server whose tool
schema jsonschema cannot take is refused naming the tool, the reason and the JSON pointer of
the faulty keyword (the server really started and listed once, in the sandbox); a package spec
without its version, a `--dir` without its command, and a missing key are refused before
anything is fetched or started. And a PyPI server (a wheel from a local index, as pip's own
settings name one) is packed with each wheel's SHA-256 and run as `python -m`."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from lineup.sdk.bundle import SigningKey, read_header
from lineup.supervisor._pack_mcp import main
from lineup.tests.support.bundles import manifest_in

pytestmark = pytest.mark.timeout(120)

BAD_SCHEMA_SERVER = """
from typing import Annotated

from mcp.server.mcpserver import MCPServer
from pydantic import Field

server = MCPServer("Bad Schema")


@server.tool(description="Counts.")
def count(n: Annotated[int, Field(json_schema_extra={"minimum": "zero"})]) -> int:
    return n


if __name__ == "__main__":
    server.run("stdio")
"""


@pytest.fixture
def key(tmp_path: Path) -> Path:
    path = tmp_path / "key"
    path.write_text(SigningKey(b"\x09" * 32).dumps())
    return path


def refusal(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    assert main(list(argv)) == 1
    lines = capsys.readouterr().err.splitlines()
    assert len(lines) == 1, lines
    assert lines[0].startswith("lineup app pack-mcp: ")
    return lines[0].removeprefix("lineup app pack-mcp: ")


def test_a_tool_schema_jsonschema_cannot_take_is_refused_with_its_keyword_and_path(
    tmp_path: Path, key: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "bad"
    folder.mkdir()
    (folder / "server.py").write_text(BAD_SCHEMA_SERVER)
    out = tmp_path / "bad.lineup"
    said = refusal(
        capsys, "--dir", str(folder), "--key", str(key), "--out", str(out),
        "--", sys.executable, "server.py",
    )  # fmt: skip
    assert said == "mcp_tool_refused count mcp_schema_invalid /inputSchema/properties/n/minimum"
    assert not out.exists()


@pytest.mark.parametrize(
    ("argv", "reason"),
    [
        (["--npm", "@modelcontextprotocol/server-basic-vanillajs"], "mcp_package_invalid"),
        (["--pypi", "mcp-server-time>=1"], "mcp_package_invalid"),
        (["--dir", "."], "mcp_command_missing"),
        (["--dir", ".", "--scope", "Not A Scope"], "app_scope_invalid"),
    ],
)
def test_a_source_that_cannot_be_fetched_as_given_is_refused_before_anything_runs(
    tmp_path: Path,
    key: Path,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    reason: str,
) -> None:
    said = refusal(capsys, *argv, "--key", str(key), "--out", str(tmp_path / "x.lineup"))
    assert said.split()[0] == reason


def test_a_missing_key_is_key_not_found(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    said = refusal(
        capsys, "--dir", ".", "--key", str(tmp_path / "none"), "--out", str(tmp_path / "x"),
        "--", "python3",
    )  # fmt: skip
    assert said.split()[0] == "key_not_found"


WEATHER = """from mcp.server.mcpserver import MCPServer

server = MCPServer("Weather Wheel")


@server.tool(description="Today's forecast for a city.")
def forecast(city: str) -> str:
    return "sunny"


server.run("stdio")
"""


def _b64(digest: bytes) -> str:
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def write_wheel(folder: Path, name: str, version: str) -> Path:
    """A pure-Python wheel of `name` (its `__main__` the server above), as a build writes one;
    it declares no dependency (the `mcp` SDK is this interpreter's)."""
    module, info = name.replace("-", "_"), f"{name.replace('-', '_')}-{version}.dist-info"
    files = {
        f"{module}/__init__.py": b"",
        f"{module}/__main__.py": WEATHER.encode(),
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n".encode(),
        f"{info}/WHEEL": b"Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    }
    record = (
        "".join(
            f"{path},sha256={_b64(hashlib.sha256(body).digest())},{len(body)}\n"
            for path, body in files.items()
        )
        + f"{info}/RECORD,,\n"
    )
    wheel = folder / f"{module}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for path, body in {**files, f"{info}/RECORD": record.encode()}.items():
            archive.writestr(path, body)
    return wheel


def test_a_pypi_server_is_fetched_as_wheels_recorded_by_sha256_and_run_with_python_m(
    tmp_path: Path, key: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """About four seconds quiet, over ten on a loaded machine, by what it proves: a real
    `lineup app pack-mcp` process, whose pip fetches the wheel from the index and whose server
    starts in the sandbox, an interpreter importing the `mcp` SDK, to list its tools once."""
    index = tmp_path / "index"
    index.mkdir()
    wheel = write_wheel(index, "weather-wheel", "1.0")
    # pip's own settings: this folder is the index (what a mirror would be), nothing else.
    monkeypatch.setenv("PIP_NO_INDEX", "1")
    monkeypatch.setenv("PIP_FIND_LINKS", str(index))
    out = tmp_path / "w.lineup"
    done = subprocess.run(
        [sys.executable, "-m", "lineup", "app", "pack-mcp", "--pypi", "weather-wheel==1.0",
         "--key", str(key), "--out", str(out)],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    manifest = manifest_in(out.read_bytes())
    assert (manifest["app_scope"], manifest["version"]) == ("weather-wheel", "1.0")
    assert manifest["mcp"]["command"] == [sys.executable, "-m", "weather_wheel"]
    assert [t["method"] for t in manifest["tools"]] == ["weather-wheel.forecast"]
    lock = json.loads(files_in(out.read_bytes())["app/server/mcp-lock.json"])
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest()
    assert lock["packages"] == [
        {"name": "weather_wheel", "version": "1.0", "hash": f"sha256-{digest}"}
    ]


def files_in(data: bytes) -> dict[str, bytes]:
    _, payload = read_header(data)
    with zipfile.ZipFile(io.BytesIO(payload)) as archive:
        return {name: archive.read(name) for name in archive.namelist()}
