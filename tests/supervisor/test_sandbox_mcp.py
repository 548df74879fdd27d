"""The `mcp` sandbox profile (an MCP app's process, which starts its one server): it may execute
its interpreter and its own folder and nothing else, the server inherits every other layer, and
memory is bounded in a way V8 can start under. Each claim in a real, throwaway process that
confines itself with `prepare_child`, as the zygote's child does."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
from pathlib import Path

import pytest
from pydantic import ValidationError

from lineup.supervisor._sandbox import SandboxPolicy

NODE = shutil.which("node")


def confined(data_dir: Path, sandbox: dict[str, object], body: str) -> str:
    """Run `body` in a fresh interpreter after it applied `sandbox`; its stdout."""
    script = f"""
import os, socket, subprocess, sys
from lineup.supervisor import _sandbox
_sandbox.prepare_child({{
    "target": "lineup.tests.support.actors:HangActor",
    "data_dir": {str(data_dir)!r},
    "config": {{"sandbox": {{"app_scope": "srv", **{sandbox!r}}}}},
}})
{body}
"""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr[-2000:]
    return done.stdout.strip()


def test_an_mcp_app_runs_its_interpreter_and_no_other_program(
    data_dir: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "server"
    folder.mkdir()
    sandbox: dict[str, object] = {"profile": "mcp", "exec_paths": [sys.executable, str(folder)]}
    got = confined(
        data_dir,
        sandbox,
        """
child = subprocess.run([sys.executable, "-c", "print('child ran')"], capture_output=True, text=True)
print(child.stdout.strip())
try:
    subprocess.run(["/bin/sh", "-c", "true"])
except PermissionError as exc:
    print("sh", exc.errno)
script = '''
import socket
try:
    socket.socket(socket.AF_INET, socket.SOCK_STREAM)
except PermissionError as exc:
    print("socket", exc.errno)
'''
print(subprocess.run([sys.executable, "-c", script], capture_output=True, text=True).stdout.strip())
""",
    )
    # Landlock refuses the shell (EACCES); the server inherits seccomp: no socket (EPERM).
    assert got.splitlines() == ["child ran", "sh 13", "socket 1"]


def test_a_miniapp_still_starts_no_process(data_dir: Path) -> None:
    got = confined(
        data_dir,
        {"profile": "miniapp"},
        """
try:
    subprocess.run([sys.executable, "-c", "pass"])
except PermissionError as exc:
    print("refused", exc.errno)
""",
    )
    assert got == "refused 1"


def test_only_the_mcp_profile_may_name_what_it_executes() -> None:
    with pytest.raises(ValidationError):
        SandboxPolicy(profile="miniapp", app_scope="srv", exec_paths=(sys.executable,))
    with pytest.raises(ValidationError):  # relative: which file would it be?
        SandboxPolicy(profile="mcp", app_scope="srv", exec_paths=("bin/python",))


def test_an_mcp_apps_memory_is_bounded_by_its_writable_data(data_dir: Path) -> None:
    sandbox: dict[str, object] = {
        "profile": "mcp",
        "memory_mb": 128,
        "exec_paths": [sys.executable],
    }
    got = confined(
        data_dir,
        sandbox,
        """
import resource
print(resource.getrlimit(resource.RLIMIT_DATA)[0] >> 20)
try:
    held = bytearray(256 << 20)
except MemoryError:
    print("bounded")
""",
    )
    assert got.splitlines() == ["128", "bounded"]


@pytest.mark.skipif(NODE is None, reason="Node is not installed on this machine")
def test_v8_starts_under_the_mcp_memory_bound_where_an_address_space_bound_stops_it(
    data_dir: Path,
) -> None:
    assert NODE is not None
    code = "console.log('v8', new Array(1e6).fill(1).length)"
    sandbox: dict[str, object] = {"profile": "mcp", "memory_mb": 512, "exec_paths": [NODE]}
    got = confined(
        data_dir,
        sandbox,
        f"""
done = subprocess.run([{NODE!r}, "-e", {code!r}], capture_output=True, text=True)
print(done.returncode, done.stdout.strip())
""",
    )
    assert got == "0 v8 1000000"
    # The same bound as RLIMIT_AS (what a MiniApp gets) does not let V8 start at all.
    capped = subprocess.run(
        ["prlimit", f"--as={512 << 20}", NODE, "-e", code],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert capped.returncode != 0


def test_a_server_with_a_proxy_reaches_that_one_port_on_its_own_loopback_and_nothing_else(
    data_dir: Path, tmp_path: Path
) -> None:
    folder = tmp_path / "server"
    folder.mkdir()
    sandbox: dict[str, object] = {
        "profile": "mcp",
        "exec_paths": [sys.executable, str(folder)],
        "proxy": True,
    }
    # A real TCP server on the host: inside the namespace its address is another loopback's.
    with socket.create_server(("127.0.0.1", 0)) as host_server:
        host_port = host_server.getsockname()[1]
        got = confined(
            data_dir,
            sandbox,
            f"""
fd, port = map(int, os.environ["LINEUP_MCP_PROXY_FD"].split(":"))
listener = socket.socket(fileno=fd)
assert listener.getsockname() == ("127.0.0.1", port)
script = '''
import errno, socket, sys
port, host_port = int(sys.argv[1]), int(sys.argv[2])
def attempt(what, act):
    try:
        act()
        print(what, "ok")
    except OSError as exc:
        print(what, errno.errorcode[exc.errno])
attempt("proxy", lambda: socket.create_connection(("127.0.0.1", port), timeout=5).close())
attempt("other-port", lambda: socket.create_connection(("127.0.0.1", host_port), timeout=5))
attempt("off-loopback", lambda: socket.create_connection(("192.0.2.1", port), timeout=5))
attempt("bind", lambda: socket.create_server(("127.0.0.1", 0)))
attempt("udp", lambda: socket.socket(socket.AF_INET, socket.SOCK_DGRAM))
'''
server = subprocess.Popen(
    [sys.executable, "-c", script, str(port), str({host_port})], stdout=subprocess.PIPE, text=True
)
accepted, _ = listener.accept()
accepted.close()
print(server.communicate(timeout=30)[0].strip())
""",
        )
    assert got.splitlines() == [
        "proxy ok",
        "other-port EACCES",  # Landlock: the proxy's port alone
        "off-loopback ENETUNREACH",  # the namespace routes nowhere
        "bind EPERM",  # seccomp: no listening of its own
        "udp EPERM",  # seccomp: TCP sockets only
    ]


def test_a_proxy_is_for_the_mcp_profile_only() -> None:
    with pytest.raises(ValidationError):
        SandboxPolicy.model_validate({"profile": "miniapp", "app_scope": "a", "proxy": True})
