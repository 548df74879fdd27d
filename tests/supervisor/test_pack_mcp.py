"""`lineup app pack-mcp`'s refusals, each one line with a stable reason: a server whose tool
schema jsonschema cannot take is refused naming the tool, the reason and the JSON pointer of
the faulty keyword (the server really started and listed once, in the sandbox); a package spec
without its version, a `--dir` without its command, and a missing key are refused before
anything is fetched or started."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from lineup.sdk.bundle import SigningKey
from lineup.supervisor._pack_mcp import main

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
