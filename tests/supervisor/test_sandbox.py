"""The MiniApp sandbox (DESIGN §8), proven with real processes on the real kernel.

A hostile MiniApp-kind actor (`tests/support/hostile.py`) is forked by the real zygote under a
real supervisor (beside a real store, which keeps the audit) with `{"sandbox": {...}}` in its
config; it tries every attack in turn, writes what each got to its private data directory, and
only then reports ready. Each attack must fail with the errno of the layer that stops it, each
seccomp denial must leave the supervisor's audit row, and the process itself keeps running (it
answers over the bus afterwards).

The hostile-input suite (issue 11), one real-process test per finding, each asserting the
stable code, the audit row and that the runtime kept serving. Those that need the whole tree
(an Agent, the Shell, the SDK) live beside the tests of their path:
1. an Agent text reusing a user message's id, then a restart on the same data dir:
   `tests/e2e/test_message_ids.py::test_an_agent_text_reusing_a_users_message_id_…`;
2. an id a MiniApp chose, used by the Agent later: `test_message_ids.py::test_an_id_a_miniapp_…`
   (the runtime mints every outbound id: `tests/actors/router/test_ids.py`);
3. the Shell's socket, any client: `tests/e2e/test_shell_socket.py` (pipelined close frames and
   GETs, handshake refusals, a frame over the limit, ten thousand refused frames);
4. large Agent messages, shown in full before and after restarts: `tests/e2e/test_chat_pages.py`
   and in Chromium `tests/browser/test_chat_pages_e2e.py`;
5. only the chat speaks as the user: `tests/e2e/test_tools.py::test_only_the_chat_speaks_…`;
6. a view nested too deep, or over 64 KiB: `test_tools.py::test_a_view_nested_too_deep_…`,
   `test_chat_pages.py::test_a_view_over_64_kib_…`;
7. quotas: `apps.open`, progress, denied and malformed frames, a MiniApp that exits:
   `tests/e2e/test_quotas.py`; disk and threads: here (`…_disk_quota_…`, `…_pids_cgroup_…`);
8. no terminal: here (`test_a_miniapp_of_a_tree_run_in_a_terminal_has_no_terminal`);
9. read only what it runs: here (`test_a_miniapp_reads_only_the_code_it_runs_…`);
10. NaN and Infinity: `tests/e2e/test_session_data.py` (session data, a raw bus frame);
11. trusted components: `test_chat_pages.py::test_a_configured_app_drawing_with_trusted_…`;
12. the password: `tests/supervisor/test_cli.py::test_the_appserver_password_…`;
and poison at rest, a data dir with undecodable rows: `tests/e2e/test_dead_letters.py`.
"""

from __future__ import annotations

import errno
import fcntl
import json
import logging
import math
import os
import pty
import signal
import socket
import subprocess
import sys
import termios
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import trio
import trio.testing

from lineup.actors.kernel import ActorKind, AuditRecord, ErrorCode, HealthReply, HealthRequest
from lineup.actors.kernel.channel import channel_pair
from lineup.supervisor import ChildSpec, Restart, Supervisor, _process
from lineup.supervisor._applog import app_log_path
from lineup.supervisor._denials import ANSWER_BURST, ANSWER_RATE, AUDIT_WINDOW
from lineup.supervisor._quota import QUOTA_EXCEEDED, find_pids_cgroup
from lineup.supervisor._readable import RUNTIME_CODE, own_code, package_root
from lineup.supervisor._sandbox import (
    LAYERS,
    SandboxPolicyInvalid,
    SandboxUnavailable,
    app_data_dir,
    prepare_child,
    probe_layers,
)
from lineup.tests.support.hostile import OUTCOMES, SandboxedPingReply, SandboxedPingRequest
from lineup.tests.support.tree import attach, audit_rows, start_tree

HOSTILE = "lineup.tests.support.hostile:HostileActor"
NAME = "miniapp:hostile"
SCOPE = "hostile"
SECRET = "LINEUP_TEST_SECRET"

# What every attack gets from the whole sandbox, and which layer answers.
FULL_SANDBOX = {
    "tcp_connect": "EPERM",  # seccomp: socket()
    "udp_send": "EPERM",  # seccomp: socket()
    "control_socket": "EPERM",  # seccomp: socket()
    "abstract_socket": "EPERM",  # seccomp: socket()
    "datagram_socketpair": "EPERM",  # seccomp: socketpair() other than AF_UNIX stream
    "read_database": "EACCES",  # Landlock: the data dir is not granted, only the app's own
    "read_passwd": "EACCES",  # Landlock: /etc is not granted (ld.so.cache alone is)
    "write_passwd": "EACCES",  # Landlock
    "write_data_dir": "EACCES",  # Landlock
    "write_code": "EACCES",  # Landlock: code is read-only
    "write_tmp": "EACCES",  # Landlock
    "read_environ": "EACCES",  # Landlock: /proc is not granted
    "kill": "EPERM",  # Landlock signal scope
    "ptrace": "EPERM",  # seccomp (Landlock refuses it across domains too)
    "prlimit_other": "EPERM",  # seccomp: prlimit64 only on pid 0
    "renice_other": "EPERM",  # seccomp: setpriority only on self
    "fork": "EPERM",  # seccomp: clone without CLONE_THREAD
    "subprocess": "EPERM",  # seccomp: vfork/clone
    "unshare_user": "EPERM",  # seccomp
    "io_uring": "EPERM",  # seccomp
    "chown": "EPERM",  # no capabilities (CAP_CHOWN)
    "memory": "MemoryError",  # RLIMIT_AS
    "write_home": "ok",  # its private data dir: write, mkdir, rename, read back
    "stream_socketpair": "ok",  # what trio needs
    "thread": "ok",  # trio's worker threads (clone with CLONE_THREAD)
    "secret_in_environment": "False",  # scrubbed environment
    # Read only what it runs (Landlock grants RUNTIME_CODE and its own package, not the root).
    "read_git": "EACCES",
    "list_root": "EACCES",
    "list_tests": "EACCES",
    "list_ops": "EACCES",
    "read_ops": "EACCES",
    "read_other_actor": "EACCES",
    "read_supervisor": "EACCES",
    "read_other_app": "EACCES",
    "read_sdk": "ok",
    "read_kernel": "ok",
    "read_own_code": "ok",  # tests/support is the hostile app's own module directory
    # No terminal: stdin is /dev/null, stdout and stderr are pipes, no controlling terminal.
    "open_tty": "EACCES",  # Landlock; without it, ENXIO (no controlling terminal)
    "tcgetattr_stdin": "ENOTTY",
    "tcgetattr_stdout": "ENOTTY",
    "tcgetattr_stderr": "ENOTTY",
    "tcsetattr_stdout": "ENOTTY",
    "isatty": "False,False,False",
    "write_stdout": "ok",  # a forged `lineup:` line and a window title: to its own log
}
FORGED = b"lineup: forged by the app"

# The attacks seccomp refuses, and the system call each audit row names. The others are
# refused by Landlock, capabilities or rlimits, which report to no one but the app (see
# supervisor/_sandbox.py: Landlock audits only through the kernel's audit subsystem).
SECCOMP_DENIED = {
    "tcp_connect": "socket",
    "udp_send": "socket",
    "control_socket": "socket",
    "abstract_socket": "socket",
    "datagram_socketpair": "socketpair",
    "ptrace": "ptrace",
    "prlimit_other": "prlimit64",
    "renice_other": "setpriority",
    "fork": "clone",
    "subprocess": "vfork",  # CPython starts a child with vfork
    "unshare_user": "unshare",
    "io_uring": "io_uring_setup",
}
STORE = ChildSpec("store", ActorKind.STORE, "lineup.actors.store:StoreActor")


@dataclass
class Targets:
    """What the hostile actor aims at: listeners that would accept it if it got through."""

    tcp: socket.socket
    udp: socket.socket
    abstract: socket.socket
    abstract_name: str

    def config(self) -> dict[str, Any]:
        return {
            "target_pid": os.getpid(),
            "tcp_port": self.tcp.getsockname()[1],
            "udp_port": self.udp.getsockname()[1],
            "abstract": self.abstract_name,
        }


@pytest.fixture
def targets() -> Iterator[Targets]:
    tcp = socket.create_server(("127.0.0.1", 0))
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind(("127.0.0.1", 0))
    name = f"lineup-test-{uuid.uuid4().hex}"
    abstract = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    abstract.bind("\0" + name)
    abstract.listen()
    try:
        yield Targets(tcp, udp, abstract, name)
    finally:
        for sock in (tcp, udp, abstract):
            sock.close()


def policy(data_dir: Path, **overrides: Any) -> dict[str, Any]:
    return {"profile": "miniapp", "app_scope": SCOPE, "data_dir": str(data_dir), **overrides}


def hostile_spec(config: dict[str, Any]) -> ChildSpec:
    return ChildSpec(NAME, ActorKind.MINIAPP, HOSTILE, restart=Restart.TEMPORARY, config=config)


async def run_hostile(
    nursery: trio.Nursery,
    data_dir: Path,
    targets: Targets,
    *,
    extra: dict[str, Any] | None = None,
    **overrides: Any,
) -> tuple[Supervisor, dict[str, str]]:
    """Start the hostile actor sandboxed (`overrides` go to its policy, `extra` to its config);
    return the tree and what each attack got."""
    config = {"sandbox": policy(data_dir, **overrides), **targets.config(), **(extra or {})}
    supervisor = await start_tree(nursery, [STORE, hostile_spec(config)], data_dir)
    assert supervisor.children[NAME].state == "running"  # ready: every attack has run
    outcomes = json.loads((app_data_dir(data_dir, SCOPE) / OUTCOMES).read_text())
    return supervisor, outcomes


async def test_every_attack_fails_with_its_layers_errno_and_the_app_keeps_running(
    nursery: trio.Nursery,
    data_dir: Path,
    targets: Targets,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv(SECRET, "hunter2")  # the zygote, and so every child, inherits it
    supervisor, outcomes = await run_hostile(nursery, data_dir, targets)
    assert outcomes == FULL_SANDBOX
    assert not (data_dir / "escaped.txt").exists()
    assert (data_dir / "lineup.db").is_file()  # the store's, which the app could not read
    # Alive and well after all that: it answers the supervisor over its control channel.
    child = supervisor.children[NAME]
    with trio.fail_after(5):
        reply = await supervisor.bus.request(NAME, HealthRequest(), expect=HealthReply)
    assert reply.pid == child.pid
    # The inherited environment block is wiped, not just detached: /proc serves it.
    assert b"hunter2" not in Path(f"/proc/{child.pid}/environ").read_bytes()


async def test_each_seccomp_denial_is_audited_by_the_supervisor_naming_only_the_call(
    nursery: trio.Nursery, data_dir: Path, targets: Targets
) -> None:
    supervisor, outcomes = await run_hostile(nursery, data_dir, targets)
    assert {outcomes[attack] for attack in SECCOMP_DENIED} == {"EPERM"}  # as without auditing
    auditor = await attach(nursery, supervisor, ActorKind.ROUTER, "auditor")
    expected = set(SECCOMP_DENIED.values())

    def denials(rows: tuple[AuditRecord, ...]) -> set[str | None]:
        return {r.code for r in rows if r.event == "sandbox.denied"}

    rows = await audit_rows(auditor, lambda rows: denials(rows) >= expected, peer=NAME)
    # Exactly these calls: nothing the app needs to run (threads, trio's socketpair) is denied.
    assert denials(rows) == expected
    for row in rows:
        assert (row.actor, row.peer) == ("supervisor", NAME)
        assert row.message_type is None and row.subject_id is None  # no arguments, ever
    # The runtime still answers, and so does the app.
    with trio.fail_after(5):
        await supervisor.bus.request(NAME, HealthRequest(), expect=HealthReply)
        await auditor.request("store", HealthRequest(), expect=HealthReply)


async def test_a_flood_of_denied_calls_is_answered_at_a_bounded_rate_and_audited_sparsely(
    nursery: trio.Nursery, data_dir: Path, targets: Targets
) -> None:
    flood = 400  # past the pacer's burst: the rest are answered at its rate
    supervisor, outcomes = await run_hostile(nursery, data_dir, targets, extra={"flood": flood})
    assert outcomes["flood"] == f"EPERM x{flood}"
    took = float(outcomes["flood_seconds"])
    assert took >= (flood - ANSWER_BURST) / ANSWER_RATE * 0.9  # it was slowed down
    auditor = await attach(nursery, supervisor, ActorKind.ROUTER, "auditor")
    rows = await audit_rows(
        auditor, lambda rows: any(r.code == "socket" for r in rows), event_prefix="sandbox."
    )
    sockets = [r for r in rows if r.code == "socket"]
    assert 1 <= len(sockets) <= math.ceil(took / AUDIT_WINDOW) + 1  # not one row per call
    with trio.fail_after(5):
        await supervisor.bus.request(NAME, HealthRequest(), expect=HealthReply)


async def test_a_sandboxed_app_answers_on_an_introduced_channel_and_runs_worker_threads(
    nursery: trio.Nursery, data_dir: Path, targets: Targets
) -> None:
    supervisor, _ = await run_hostile(nursery, data_dir, targets)
    router = await attach(nursery, supervisor, ActorKind.ROUTER, "router")
    with trio.fail_after(5):
        reply = await router.request(NAME, SandboxedPingRequest(), expect=SandboxedPingReply)
    assert reply.pid == supervisor.children[NAME].pid
    assert reply.thread_result == 42


async def test_the_sandboxed_process_has_no_capabilities_and_every_layer_is_on(
    nursery: trio.Nursery, data_dir: Path, targets: Targets
) -> None:
    supervisor, _ = await run_hostile(nursery, data_dir, targets)
    pid = supervisor.children[NAME].pid
    status = dict(
        line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
    )
    for field in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
        assert int(status[field], 16) == 0, field
    assert status["NoNewPrivs"].strip() == "1"
    assert status["Seccomp"].strip() == "2"  # filter mode
    assert os.readlink(f"/proc/{pid}/ns/net") != os.readlink("/proc/self/ns/net")
    # Beyond stdio and the control channel, only what trio opened since: no inherited file.
    fds = {int(fd): os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")}
    assert {0, 1, 2, 3} <= fds.keys()
    assert fds[3].startswith("socket:")
    assert all(fds[fd].startswith(("socket:", "anon_inode:")) for fd in fds if fd > 3), fds
    assert os.readlink(f"/proc/{pid}/cwd") == str(app_data_dir(data_dir.resolve(), SCOPE))


async def test_without_seccomp_landlock_and_the_netns_still_hold_the_network_and_the_files(
    nursery: trio.Nursery, data_dir: Path, targets: Targets
) -> None:
    """Defence in depth: each layer behind seccomp answers on its own (and the attacks that
    do get through here are the reason seccomp is there: fork, prlimit, unshare, control.sock)."""
    _, outcomes = await run_hostile(nursery, data_dir, targets, without=["seccomp"])
    held = {
        "tcp_connect": "EACCES",  # Landlock: TCP connect handled, no port granted
        "udp_send": "ENETUNREACH",  # the private network namespace: its loopback is down
        "abstract_socket": "ECONNREFUSED",  # the namespace has its own abstract names
        "read_database": "EACCES",
        "write_passwd": "EACCES",
        "write_code": "EACCES",
        "read_environ": "EACCES",
        "kill": "EPERM",  # Landlock signal scope
        "ptrace": "EPERM",  # Landlock: no ptrace outside its domain
        "subprocess": "EACCES",  # Landlock: nothing is executable
        "memory": "MemoryError",
        "write_home": "ok",
    }
    assert {name: outcomes[name] for name in held} == held


async def test_without_the_netns_landlock_scopes_abstract_sockets(
    nursery: trio.Nursery, data_dir: Path, targets: Targets
) -> None:
    _, outcomes = await run_hostile(nursery, data_dir, targets, without=["seccomp", "netns"])
    assert outcomes["abstract_socket"] == "EPERM"  # the listener exists; the scope refuses it
    assert outcomes["tcp_connect"] == "EACCES"


def _exit_status(record: logging.LogRecord) -> int:
    """The status a `supervisor.child_exited` line logs (its third argument)."""
    assert isinstance(record.args, tuple)
    status = record.args[2]
    assert isinstance(status, int)
    return status


async def test_a_sandboxed_app_that_spins_past_its_cpu_limit_is_killed_and_recorded(
    nursery: trio.Nursery, data_dir: Path, targets: Targets, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="lineup.supervisor")
    config = {"sandbox": policy(data_dir, cpu_s=1), "attack": "spin", **targets.config()}
    supervisor = await start_tree(nursery, [STORE, hostile_spec(config)], data_dir)
    child = supervisor.children[NAME]
    with trio.fail_after(20):
        await child.exited.wait()
    await trio.testing.wait_all_tasks_blocked()  # the exit has gone through the supervisor
    assert child.state == "failed"
    statuses = {
        _exit_status(record)
        for record in caplog.records
        if record.msg.startswith("supervisor.child_exited")
    }
    # SIGXCPU at the soft limit; SIGKILL one second later had it been caught.
    assert statuses <= {-signal.SIGXCPU, -signal.SIGKILL}
    assert statuses
    # The audit names the signal, and the runtime is still there to keep it.
    auditor = await attach(nursery, supervisor, ActorKind.ROUTER, "auditor")
    rows = await audit_rows(
        auditor,
        lambda rows: any(r.event == "supervisor.child_killed" for r in rows),
        peer=NAME,
    )
    killed = {r.code for r in rows if r.event == "supervisor.child_killed"}
    assert killed == {signal.Signals(-status).name for status in statuses}


async def test_a_child_whose_policy_is_invalid_dies_before_running_any_actor_code(
    nursery: trio.Nursery, data_dir: Path, targets: Targets
) -> None:
    config = {"sandbox": policy(data_dir, app_scope="../escape"), **targets.config()}
    supervisor = await start_tree(nursery, [hostile_spec(config)], data_dir)
    child = supervisor.children[NAME]
    assert child.state == "failed"
    assert not child.ready.is_set()
    assert not (data_dir / "apps").exists()


def test_probe_layers_reports_every_layer_on_this_machine() -> None:
    layers = probe_layers()
    assert layers["landlock_abi"] >= 6
    for name in ("landlock", "landlock_net", "landlock_scope", "seccomp_audit", *LAYERS):
        assert layers[name] is True, name


def test_a_malformed_policy_is_refused_before_anything_is_applied(data_dir: Path) -> None:
    boot = {"target": HOSTILE, "data_dir": str(data_dir), "config": {}}
    for bad in (
        policy(data_dir, app_scope="../../etc"),
        policy(data_dir, memory_mb=1),
        policy(data_dir, unknown_knob=True),
        policy(data_dir, without=["landlock", "everything"]),
        {"profile": "runtime", "app_scope": SCOPE},
    ):
        with pytest.raises(SandboxPolicyInvalid) as refused:
            prepare_child({**boot, "config": {"sandbox": bad}})
        assert refused.value.code is ErrorCode.INVALID_ARGUMENTS
    prepare_child(boot)  # no policy: a runtime actor, nothing to apply


def test_a_missing_layer_is_refused_unless_the_policy_allows_weak(
    data_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from lineup.supervisor import _sandbox

    weak = {**probe_layers(), "seccomp": False, "landlock_abi": 4}
    monkeypatch.setattr(_sandbox, "probe_layers", lambda: weak)
    boot = {"target": HOSTILE, "data_dir": str(data_dir), "config": {"sandbox": policy(data_dir)}}
    with pytest.raises(SandboxUnavailable) as refused:
        prepare_child(boot)  # raises before applying anything to this process
    assert refused.value.missing == ("landlock", "seccomp")


def run_python(script: str) -> str:
    """Run `script` in a fresh interpreter (a real, throwaway process); return its stdout."""
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=30, check=False
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_without_cap_sys_admin_the_netns_comes_through_a_user_namespace() -> None:
    """The path a non-root runtime takes: a user namespace mapping our ids to themselves."""
    with socket.create_server(("127.0.0.1", 0)) as listener:
        port = listener.getsockname()[1]
        got = run_python(f"""
import errno, os, socket
from lineup.supervisor import _sandbox
net, user = os.readlink("/proc/self/ns/net"), os.readlink("/proc/self/ns/user")
_sandbox._enter_netns(user_namespace=True)
assert os.readlink("/proc/self/ns/net") != net and os.readlink("/proc/self/ns/user") != user
assert (os.getuid(), os.getgid()) == ({os.getuid()}, {os.getgid()})
try:
    socket.create_connection(("127.0.0.1", {port}), timeout=2)
except OSError as exc:
    print(errno.errorcode[exc.errno])
""")
    assert got == "ENETUNREACH"


def test_the_whole_sandbox_applies_on_the_user_namespace_path(data_dir: Path) -> None:
    got = run_python(f"""
import ctypes, os
from lineup.supervisor import _sandbox
_sandbox._effective_caps = lambda: 0  # as a runtime without CAP_SYS_ADMIN sees itself
_sandbox.prepare_child({{
    "target": "lineup.tests.support.actors:HangActor",
    "data_dir": {str(data_dir)!r},
    "config": {{"sandbox": {{"profile": "miniapp", "app_scope": "userns"}}}},
}})
try:
    os.fork()
except PermissionError:
    print("confined", os.getuid())
""")
    assert got == f"confined {os.getuid()}"
    assert app_data_dir(data_dir, "userns").is_dir()


def test_a_child_of_a_warmed_zygote_applies_the_sandbox_without_probing_or_building(
    data_dir: Path,
) -> None:
    """The zygote warms the sandbox before it forks (`_sandbox.warm`, given the child's boot):
    each child then neither probes the kernel or its capabilities, nor reads where its
    environment is, nor builds the policy's validator, nor resolves the runtime's code, the
    interpreter's path, or a bundled app's code and Landlock rules again (~5 ms of a sandboxed
    fork → ready, in every child)."""
    got = run_python(f"""
import os, sys
from lineup.supervisor import _readable, _sandbox
boot = {{
    "target": "lineup.tests.support.actors:HangActor",
    "data_dir": {str(data_dir)!r},
    "config": {{"sandbox": {{"profile": "miniapp", "app_scope": "warmed"}}}},
}}
_sandbox.warm(boot)
def probed():
    raise AssertionError("probed again")
_sandbox.probe_layers = probed
_sandbox._effective_caps = probed
_sandbox._env_block = probed
assert _sandbox.SandboxPolicy.__pydantic_complete__
cached = (
    _readable.runtime_trees,
    _readable.path_entries,
    _readable.package_root,
    _readable.readable_runtime,
    _readable.bundled_code,
    _readable.bundled_rules,
)
misses = [f.cache_info().misses for f in cached]
_sandbox.prepare_child(boot)
assert [f.cache_info().misses for f in cached] == misses == [1, 1, 1, 1, 1, 1], misses
try:
    os.fork()
except PermissionError:
    print("confined")
""")
    assert got == "confined"


def test_the_runtime_code_granted_is_what_a_miniapp_imports_and_nothing_more() -> None:
    """RUNTIME_CODE is the closure of the SDK and the kernel, recomputed here from a fresh
    interpreter that imports them and every bundled app, as the SDK's host does inside."""
    from lineup.miniapps.catalogue import BUNDLED

    apps = sorted({app.entry.partition(":")[0] for app in BUNDLED})
    imported = json.loads(
        run_python(f"""
import json, sys
import lineup, lineup.sdk, lineup.actors.kernel.actor
for app in {apps!r}:
    __import__(app)
root = lineup.__path__[0]
print(json.dumps(sorted(
    m.__file__[len(root) + 1:] for m in list(sys.modules.values())
    if getattr(m, "__file__", None) and m.__file__.startswith(root + "/")
)))
""")
    )
    root = package_root()
    own = [own_code(app, root)[-1] for app in apps]
    granted = [root / piece for piece in RUNTIME_CODE] + [
        p for app in apps for p in own_code(app, root)
    ]
    for module in imported:
        assert any((root / module).is_relative_to(path) for path in granted), module
    # And nothing that a MiniApp never runs: no other actor, no supervisor, no tests or tools.
    for piece in RUNTIME_CODE:
        for forbidden in ("tests", "ops", "supervisor", "actors/store", "hostbridge", ".git"):
            assert not (root / forbidden).is_relative_to(root / piece)
    # A bundled app's own code is its package: never `miniapps/`, which holds the others.
    assert {path.parent for path in own} == {root / "miniapps"}


async def test_a_file_past_the_disk_quota_fails_efbig_and_the_app_is_stopped_and_audited(
    nursery: trio.Nursery, data_dir: Path, targets: Targets
) -> None:
    """Finding 7: RLIMIT_FSIZE refuses the write past `disk_mb` (EFBIG, SIGXFSZ ignored: the
    app lives to see it), and the supervisor's measure of its data dir stops it for good."""
    config = {"sandbox": policy(data_dir, disk_mb=2), "attack": "fill", **targets.config()}
    supervisor = await start_tree(nursery, [STORE, hostile_spec(config)], data_dir)
    outcomes = json.loads((app_data_dir(data_dir, SCOPE) / OUTCOMES).read_text())
    assert outcomes == {"fill": "EFBIG", "fill_bytes": str(2 << 20), "thread": "ok"}
    child = supervisor.children[NAME]
    with trio.fail_after(10):
        await child.exited.wait()
        await supervisor.wait_until(lambda: child.state == "failed")
    auditor = await attach(nursery, supervisor, ActorKind.ROUTER, "auditor")
    rows = await audit_rows(
        auditor, lambda rows: any(r.event == QUOTA_EXCEEDED for r in rows), peer=NAME
    )
    assert [(r.actor, r.code) for r in rows if r.event == QUOTA_EXCEEDED] == [
        ("supervisor", "disk")
    ]
    # Killed by the supervisor, not by SIGXFSZ: no other death is recorded.
    assert not [r for r in rows if r.event == "supervisor.child_killed"]
    # Stopped for good, and the runtime kept serving.
    assert child.restarts == 0
    with trio.fail_after(5):
        await auditor.request("store", HealthRequest(), expect=HealthReply)
    assert supervisor.children["store"].restarts == 0


async def test_threads_past_the_pids_cgroup_fail_to_start_and_are_audited(
    nursery: trio.Nursery, data_dir: Path, targets: Targets
) -> None:
    """Finding 7: RLIMIT_NPROC counts the user's every process; the app's own pids cgroup
    (this kernel offers cgroup v1's pids hierarchy to root) bounds its threads alone."""
    assert find_pids_cgroup() is not None  # what this machine offers (see the report)
    config = {
        "sandbox": policy(data_dir, threads=32),
        "attack": "threads",
        "threads": 3000,
        **targets.config(),
    }
    supervisor = await start_tree(nursery, [STORE, hostile_spec(config)], data_dir)
    outcomes = json.loads((app_data_dir(data_dir, SCOPE) / OUTCOMES).read_text())
    assert outcomes["threads"] == "RuntimeError"  # "can't start new thread": EAGAIN
    assert 0 < int(outcomes["threads_started"]) < 32
    assert outcomes["thread"] == "ok"  # below the limit again, a thread starts
    child = supervisor.children[NAME]
    cgroup = Path(
        next(
            line.split(":", 2)[2]
            for line in Path(f"/proc/{child.pid}/cgroup").read_text().splitlines()
            if ":pids:" in line or line.startswith("0::")
        )
    )
    assert cgroup.name == SCOPE
    auditor = await attach(nursery, supervisor, ActorKind.ROUTER, "auditor")
    rows = await audit_rows(
        auditor, lambda rows: any(r.event == QUOTA_EXCEEDED for r in rows), peer=NAME
    )
    assert {(r.actor, r.code) for r in rows if r.event == QUOTA_EXCEEDED} == {
        ("supervisor", "threads")
    }
    # Refused, not stopped: the app and the runtime keep serving.
    with trio.fail_after(5):
        reply = await supervisor.bus.request(NAME, HealthRequest(), expect=HealthReply)
        await auditor.request("store", HealthRequest(), expect=HealthReply)
    assert reply.pid == child.pid
    assert child.state == "running"


# Runs the tree (a store and the hostile app, the whole sandbox) in a process whose stdin,
# stdout, stderr and controlling terminal are a pty, as `lineup run` in a terminal is; with
# "early", through the zygote forked from the supervisor's own process (`lineup._early`),
# which starts with the supervisor's stdin. Writes what it saw to argv[2], as JSON.
_TTY_TREE = """
import json, os, sys
early = sys.argv[1] == "early"
if early:
    from lineup._early import launch_zygote
    launch_zygote((), ())
from pathlib import Path
import trio
from lineup.actors.kernel import ActorKind, HealthReply, HealthRequest
from lineup.supervisor import ChildSpec, Restart, Supervisor
from lineup.supervisor._sandbox import app_data_dir
from lineup.tests.support.tree import attach

assert os.isatty(0) and os.isatty(1) and os.open("/dev/tty", os.O_RDWR) > 0
data_dir = Path(sys.argv[3])
config = {
    "sandbox": {"profile": "miniapp", "app_scope": "hostile", "data_dir": str(data_dir)},
    "target_pid": os.getpid(), "tcp_port": 9, "udp_port": 9, "abstract": "lineup-tty-none",
}
specs = [
    ChildSpec("store", ActorKind.STORE, "lineup.actors.store:StoreActor"),
    ChildSpec("miniapp:hostile", ActorKind.MINIAPP, "lineup.tests.support.hostile:HostileActor",
              restart=Restart.TEMPORARY, config=config),
]

async def main():
    seen = {}
    async with trio.open_nursery() as nursery:
        supervisor = Supervisor(specs, data_dir=data_dir)
        await nursery.start(supervisor.run)
        child = supervisor.children["miniapp:hostile"]
        seen["state"] = child.state
        seen["outcomes"] = json.loads(
            (app_data_dir(data_dir, "hostile") / "outcomes.json").read_text()
        )
        stat = open(f"/proc/{child.pid}/stat").read().rsplit(")", 1)[1].split()
        seen["tty_nr"] = int(stat[4])  # field 7: the controlling terminal, 0 for none
        seen["fds"] = [os.readlink(f"/proc/{child.pid}/fd/{fd}") for fd in (0, 1, 2)]
        probe = await attach(nursery, supervisor, ActorKind.ROUTER, "probe")
        with trio.fail_after(5):
            await supervisor.bus.request("miniapp:hostile", HealthRequest(), expect=HealthReply)
            await probe.request("store", HealthRequest(), expect=HealthReply)
        seen["serving"] = True
        nursery.cancel_scope.cancel()
    with open(sys.argv[2], "w") as out:
        json.dump(seen, out)

trio.run(main)
"""


def _be_in_a_session_with_this_terminal() -> None:
    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


@pytest.mark.parametrize("zygote", ["fresh", "early"])
def test_a_miniapp_of_a_tree_run_in_a_terminal_has_no_terminal(
    data_dir: Path, tmp_path: Path, zygote: str
) -> None:
    """Finding 8: stdin is /dev/null, stdout and stderr are the supervisor's pipes, and it has
    no controlling terminal, so it can neither write to the user's terminal nor change it."""
    master, slave = pty.openpty()
    try:
        before = termios.tcgetattr(slave)
        seen_path = tmp_path / "seen.json"
        with subprocess.Popen(
            [sys.executable, "-c", _TTY_TREE, zygote, str(seen_path), str(data_dir)],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            preexec_fn=_be_in_a_session_with_this_terminal,  # noqa: PLW1509 - single-threaded
        ) as tree:
            os.close(slave)
            slave = -1
            output = bytearray()
            while chunk := _read_pty(master):  # EIO once the tree and its children are gone
                output += chunk
            assert tree.wait(timeout=30) == 0, output.decode(errors="replace")
        after = termios.tcgetattr(master)  # the terminal's settings (echo and the rest)
        seen = json.loads(seen_path.read_text())
    finally:
        os.close(master)
        if slave >= 0:
            os.close(slave)
    assert seen["state"] == "running" and seen["serving"] is True
    outcomes = seen["outcomes"]
    assert {k: outcomes[k] for k in TTY_ATTACKS} == {k: FULL_SANDBOX[k] for k in TTY_ATTACKS}
    assert seen["tty_nr"] == 0  # no controlling terminal
    assert seen["fds"][0] == "/dev/null"
    assert all(fd.startswith("pipe:") for fd in seen["fds"][1:])
    assert outcomes["write_stdout"] == "ok"  # written, to its log: not to the terminal
    assert FORGED not in output
    assert "out lineup: forged by the app\\x1b]0;owned\\x07" in (
        app_log_path(data_dir, SCOPE).read_text()  # escaped, safe to print
    )
    assert before == after


TTY_ATTACKS = (
    "isatty",
    "open_tty",
    "tcgetattr_stdin",
    "tcgetattr_stdout",
    "tcgetattr_stderr",
    "tcsetattr_stdout",
)


def _read_pty(master: int) -> bytes:
    try:
        return os.read(master, 65536)
    except OSError:  # EIO: no process holds the other side any more
        return b""


READ_SCOPE = (
    "read_git",
    "list_root",
    "list_tests",
    "list_ops",
    "read_ops",
    "read_other_actor",
    "read_supervisor",
    "read_other_app",
    "read_database",
    "read_sdk",
    "read_kernel",
    "read_own_code",
)


async def test_a_miniapp_reads_only_the_code_it_runs_and_keeps_serving(
    nursery: trio.Nursery, data_dir: Path, targets: Targets
) -> None:
    """Finding 9: no `.git`, no tests or tooling, no other actor's or app's code, no data but
    its own; the SDK, the kernel and its own module directory (tests/support) it reads."""
    supervisor, outcomes = await run_hostile(nursery, data_dir, targets)
    assert {k: outcomes[k] for k in READ_SCOPE} == {
        **dict.fromkeys(READ_SCOPE, "EACCES"),
        "read_sdk": "ok",
        "read_kernel": "ok",
        "read_own_code": "ok",
    }
    # Landlock's refusals are the app's alone (see _sandbox): no audit row, and no kill.
    with trio.fail_after(5):
        await supervisor.bus.request(NAME, HealthRequest(), expect=HealthReply)
    assert supervisor.children[NAME].state == "running"


def test_a_process_sandboxed_with_a_terminal_of_its_own_leaves_it_first(
    data_dir: Path,
) -> None:
    """The sandbox's own guard, for a child that did not come through the zygote's `setsid`:
    a tty on stdio is replaced by /dev/null and the controlling terminal is dropped."""
    master, slave = pty.openpty()
    script = f"""
import os
from lineup.supervisor import _sandbox
assert os.isatty(1) and os.open("/dev/tty", os.O_RDWR) > 0
_sandbox.prepare_child({{
    "target": "lineup.tests.support.actors:HangActor",
    "data_dir": {str(data_dir)!r},
    "config": {{"sandbox": {{"profile": "miniapp", "app_scope": "tty", "without": ["landlock"]}}}},
}})
try:
    os.open("/dev/tty", os.O_RDWR)
    tty = "opened"
except OSError as exc:
    tty = os.strerror(exc.errno)
stat = open("/proc/self/stat").read().rsplit(")", 1)[1].split()
with open("seen.txt", "w") as out:  # the cwd is its data dir now
    out.write(",".join(str(os.isatty(fd)) for fd in (0, 1, 2)) + f";{{tty}};{{stat[4]}}")
"""
    try:
        with subprocess.Popen(
            [sys.executable, "-c", script],
            stdin=slave,
            stdout=slave,
            stderr=slave,
            preexec_fn=_be_in_a_session_with_this_terminal,  # noqa: PLW1509 - single-threaded
        ) as child:
            assert child.wait(timeout=30) == 0
    finally:
        os.close(master)
        os.close(slave)
    seen = (app_data_dir(data_dir, "tty") / "seen.txt").read_text()
    assert seen == f"False,False,False;{os.strerror(errno.ENXIO)};0"


async def test_an_app_whose_data_dir_is_already_past_its_quota_is_stopped_once_up(
    nursery: trio.Nursery, data_dir: Path, targets: Targets
) -> None:
    """Finding 7, across runs: what an earlier run left past the quota stops the app at its
    first measure, before it can add more, and the runtime goes on."""
    home = app_data_dir(data_dir, SCOPE)
    home.mkdir(parents=True)
    (home / "left-over.bin").write_bytes(b"x" * (3 << 20))
    config = {"sandbox": policy(data_dir, disk_mb=2), **targets.config()}
    supervisor = await start_tree(nursery, [STORE, hostile_spec(config)], data_dir)
    child = supervisor.children[NAME]
    with trio.fail_after(10):
        await supervisor.wait_until(lambda: child.state == "failed")
    auditor = await attach(nursery, supervisor, ActorKind.ROUTER, "auditor")
    rows = await audit_rows(
        auditor, lambda rows: any(r.event == QUOTA_EXCEEDED for r in rows), peer=NAME
    )
    assert [r.code for r in rows if r.event == QUOTA_EXCEEDED] == ["disk"]
    with trio.fail_after(5):
        await auditor.request("store", HealthRequest(), expect=HealthReply)


async def test_a_start_that_fails_after_the_fork_leaves_no_channel_to_the_garbage_collector(
    data_dir: Path, targets: Targets, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A sandboxed child's channel is the supervisor's until its report is read. The tree
    # stopping mid-start (here: the quota watcher failing to start) must close it, not leave
    # it to a later collection and its ResourceWarning (seen in CI, far from its cause).
    pairs: list[tuple[socket.socket, socket.socket]] = []

    def recorded_pair() -> tuple[socket.socket, socket.socket]:
        pairs.append(channel_pair())
        return pairs[-1]

    async def failing_watcher(*_args: object, **_kwargs: object) -> None:
        raise RuntimeError("injected")

    monkeypatch.setattr(_process, "channel_pair", recorded_pair)
    monkeypatch.setattr(_process.Processes, "_watch_quotas", failing_watcher)
    config = {"sandbox": policy(data_dir), **targets.config()}
    with pytest.RaisesGroup(RuntimeError, flatten_subgroups=True, allow_unwrapped=True):
        async with trio.open_nursery() as nursery:
            await start_tree(nursery, [hostile_spec(config)], data_dir)
    assert pairs
    assert [(ours.fileno(), theirs.fileno()) for ours, theirs in pairs] == [(-1, -1)] * len(pairs)
