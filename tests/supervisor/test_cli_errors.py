"""What the user got wrong ends `lineup` in one line on stderr, `lineup: error: ...`, and exit
status 1, never a traceback: the CLI's own `main` in this process (`support/cli.py`; the entry
point's exit status is `test_cli.py`'s, which runs each refusal's command as a process), and a
real process where the tree starts."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from lineup.tests.support.cli import lineup

RUN_TIMEOUT = 60  # seconds: each command must end by itself, well within this


def lineup_process(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    """`python -c CODE ARGS` (CODE calls the CLI's main), in a process of its own."""
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=RUN_TIMEOUT,
        stdin=subprocess.DEVNULL,
        check=False,
    )


def assert_one_error_line(result: subprocess.CompletedProcess[str], *starts: str) -> str:
    assert "Traceback" not in result.stderr, result.stderr
    assert result.returncode == 1, result
    lines = result.stderr.splitlines()
    assert len(lines) == 1, result.stderr
    assert lines[0].startswith(("lineup: error: ", *starts)), lines
    return lines[0]


@pytest.fixture
def taken_port() -> Iterator[int]:
    """A port on 127.0.0.1 that another program listens on."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        yield holder.getsockname()[1]


def test_a_data_dir_that_is_a_file_or_under_one_is_refused_in_one_line(tmp_path: Path) -> None:
    file = tmp_path / "plain-file"
    file.write_text("")
    line = assert_one_error_line(lineup("run", "--data-dir", str(file)))
    assert line == f"lineup: error: --data-dir {file}: not a directory"
    line = assert_one_error_line(lineup("run", "--data-dir", str(file / "below")))
    assert line.startswith(f"lineup: error: --data-dir {file / 'below'}: cannot create it: ")


def test_a_data_dir_that_cannot_be_written_or_created_is_refused_in_one_line() -> None:
    # /proc: a directory no one (not even root) can make owner-only or write a file in.
    line = assert_one_error_line(lineup("run", "--data-dir", "/proc"))
    assert line.startswith("lineup: error: --data-dir /proc: cannot ")
    line = assert_one_error_line(lineup("run", "--data-dir", "/proc/lineup-nowhere"))
    assert line.startswith("lineup: error: --data-dir /proc/lineup-nowhere: cannot create it: ")


def test_a_data_dir_too_long_for_its_control_socket_is_refused_before_it_is_made(
    tmp_path: Path,
) -> None:
    long = tmp_path / ("d" * 120)
    line = assert_one_error_line(lineup("run", "--data-dir", str(long)))
    assert "too long for its control socket" in line
    assert not long.exists()


@pytest.mark.parametrize("flag", ["--shell-port", "--appserver-port"])
def test_a_port_that_is_taken_is_refused_before_the_tree_starts(
    flag: str, taken_port: int, data_dir: Path
) -> None:
    result = lineup("run", "--data-dir", str(data_dir), flag, str(taken_port))
    line = assert_one_error_line(result)
    assert line == (
        f"lineup: error: {flag} {taken_port}: 127.0.0.1:{taken_port} is taken by another program"
    )
    assert "starting" not in result.stdout  # refused before the tree


# The CLI as a user runs it, but its check of the ports says "free": the port is taken between
# that check and the child's bind, as another program could take it.
RACED = (
    "import sys; import lineup.supervisor.cli as cli, lineup.supervisor._run_cli as run_cli; "
    "run_cli._port_taken = lambda port: None; cli.main(sys.argv[1:])"
)


@pytest.mark.parametrize(
    ("flag", "who"),
    [("--shell-port", "the Shell"), ("--appserver-port", "the reference AppServer")],
)
def test_a_port_taken_after_the_check_stops_the_tree_at_once_saying_why_first(
    flag: str, who: str, taken_port: int, data_dir: Path
) -> None:
    args = ("run", "--data-dir", str(data_dir), flag, str(taken_port))
    result = lineup_process(RACED, *args)
    assert result.returncode == 1, result
    assert "Traceback" not in result.stderr, result.stderr
    # The reason first, once; the children stopped half-started may log a warning each.
    lines = result.stderr.splitlines()
    reason = f"lineup: error: {who} cannot listen on 127.0.0.1:{taken_port}: "
    assert lines and lines[0].startswith(reason), result
    assert [line for line in lines if line.startswith("lineup: ")] == lines[:1], lines
    assert "open the Shell" not in result.stdout  # the tree never said it was ready


def test_logs_refuses_a_name_that_is_no_app_scope_and_a_data_dir_that_is_a_file(
    tmp_path: Path,
) -> None:
    line = assert_one_error_line(lineup("logs", "Not/A-Scope", "--data-dir", str(tmp_path)))
    assert line == "lineup: error: 'Not/A-Scope' is not an app_scope"
    file = tmp_path / "plain-file"
    file.write_text("")
    line = assert_one_error_line(lineup("logs", "task-dashboard", "--data-dir", str(file)))
    assert line == f"lineup: error: --data-dir {file}: not a directory"


@pytest.mark.parametrize("command", ["enable", "disable", "rollback", "default", "remove"])
def test_a_registry_command_refuses_a_name_that_is_no_app_scope_before_asking(
    command: str, data_dir: Path
) -> None:
    confirm = ["--yes"] if command == "remove" else []
    result = lineup("app", command, "Bad_Scope", *confirm, "--data-dir", str(data_dir))
    line = assert_one_error_line(result)
    assert line == "lineup: error: 'Bad_Scope' is not an app_scope"


def test_manifest_of_an_unknown_app_is_one_line() -> None:
    result = lineup("app", "manifest", "no-such-app")
    assert_one_error_line(result, "lineup app manifest: app_not_found ")


def test_dev_mcp_from_a_folder_holding_the_home_or_the_data_dir_is_refused_in_one_line(
    tmp_path: Path,
) -> None:
    """The server may read and execute its folder: never one holding the home or the data dir
    (each folder here holds a server that works, so only the refusal can end the command)."""
    server = Path(__file__).resolve().parents[1] / "support" / "mcp_server" / "server.py"
    home = tmp_path / "home"
    for folder in (tmp_path / "server", home):
        folder.mkdir()
        shutil.copy(server, folder / "server.py")
    cases = ((tmp_path / "server", tmp_path / "server" / ".lineup"), (home, tmp_path / "d"))
    for folder, data_dir in cases:
        result = lineup(
            "run",
            "--data-dir",
            str(data_dir),
            "--dev-mcp",
            str(folder),
            "--",
            sys.executable,
            "server.py",
            env={"HOME": str(home)},
        )
        assert assert_one_error_line(result).startswith("lineup: error: --dev-mcp: ")


def test_a_dev_mcp_server_that_lists_no_tools_is_refused_in_one_line(tmp_path: Path) -> None:
    folder = tmp_path / "server"
    folder.mkdir()
    (folder / "server.py").write_text("import sys\nsys.exit(3)\n")
    result = lineup(
        "run",
        "--data-dir",
        str(tmp_path / "d"),
        "--dev-mcp",
        str(folder),
        "--",
        sys.executable,
        "server.py",
    )
    assert assert_one_error_line(result).startswith("lineup: error: --dev-mcp: ")


def test_a_command_after_the_double_dash_without_dev_mcp_is_a_usage_error(tmp_path: Path) -> None:
    result = lineup("run", "--data-dir", str(tmp_path / "d"), "--", "python", "server.py")
    assert result.returncode == 64
    assert result.stderr.startswith("lineup: error: ")
