"""Where a MiniApp's process is confined, after fork and before any MiniApp code runs (DESIGN §8).

Theory of operation
-------------------
The zygote calls `prepare_child` in every child it forks, after it has left the zygote's
session and closed every descriptor but stdio and the control channel (fd 3). Runtime actors
are trusted and get nothing (`boot["config"]["sandbox"]` is None); a MiniApp's process gets the
whole sandbox, in this order, each step needing the privileges the next ones take away:

1. leave any terminal (stdin is /dev/null, stdout and stderr are never a tty, no controlling
   terminal), import what
   the host needs (trio's import runs `ldconfig`, impossible once inside; the app's own
   module is *not* imported: it is MiniApp code and runs only inside), create the private
   data directory `<data_dir>/apps/<app_scope>` and move into it, scrub the environment,
   close any descriptor past fd 3, become non-dumpable;
2. a new network namespace: no interfaces but a down loopback, no abstract sockets shared
   with anyone (needs CAP_SYS_ADMIN, or an unprivileged user namespace);
3. no_new_privs, then Landlock: read-only access to the interpreter, the libraries, the
   runtime code a MiniApp imports (`_readable.RUNTIME_CODE`: the SDK, the kernel and the facts, no
   other actor's code, no tests, no tooling, no `.git`) and the app's own package, read-write
   to its data directory only, no TCP, no abstract Unix socket or signal outside the process;
4. rlimits: address space, open files, tasks, CPU seconds, file size (`disk_mb`: a write past
   it fails EFBIG, SIGXFSZ is ignored), no core dumps;
5. drop every capability (a root runtime's child would otherwise keep CAP_SYS_ADMIN, and with
   it /proc/<pid>/environ of any process, and CAP_SYS_PTRACE...);
6. seccomp last, since it forbids unshare and the other calls the steps above make;
7. hand the supervisor the sandbox's report on the control channel, before the channel carries
   anything else (`_report`): one byte, with the seccomp listener attached, so that the
   supervisor, not the untrusted app, audits every call the filter denies;
8. if the policy names a pids cgroup, wait for the supervisor's one byte saying it has moved
   this process there (`_quota`; it does so meanwhile, as the move is slow), before any app
   code can start a thread.

A layer the kernel lacks is an error unless the policy says `allow_weak`.

An MCP app's process (profile `mcp`: `lineup.sdk.mcp`'s adapter, which starts its one MCP
server over stdio) gets the same layers with three differences, each as narrow as the server
needs: seccomp lets it start processes and programs (`_seccomp`'s `spawn`); Landlock grants the
execute right on `exec_paths` alone (the server's interpreter, the dynamic loader, its own
folder), so nothing else can be run; and memory is bounded by RLIMIT_DATA instead of RLIMIT_AS,
since V8 reserves far more address space than it uses and RLIMIT_AS stops it at start, while
RLIMIT_DATA counts only what is writable (a reservation is not). The server inherits everything
else: the network namespace, the data dir as its only writable place, the rlimits, no
capabilities, the pids cgroup.

An MCP server that declares hosts (`proxy`: step 1 of `lineup.sdk.mcp_network`'s design) has,
in its network namespace, the loopback up and a listening socket on 127.0.0.1:P made here,
before Landlock and seccomp (its descriptor and port are in `$LINEUP_MCP_PROXY_FD`, `FD:PORT`,
for the adapter; close-on-exec, and the server's environment is the adapter's to give); then
Landlock lets TCP connect to port P alone, and seccomp lets TCP sockets be opened, connected
and accepted (`_seccomp`'s `net`). Nothing else in the namespace listens, and nothing routes
out of it: the proxy is the only way out, and what it may reach is the runtime's to decide.
Without a network namespace (a weak sandbox) no proxy is made: the server stays offline.

Landlock's denials are not audited row by row: Landlock (ABI 7) reports them only to the
kernel's audit subsystem, which is off on the machines this runs on (`AUDIT_GET`: enabled 0),
and turning it on is a host-wide change no application runtime should make. The errno is the
app's; what the layer holds is proven by tests/supervisor/test_sandbox.py.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import importlib
import importlib.util
import logging
import os
import posix
import resource
import signal
import socket
import struct
import sys
import termios
from collections.abc import Mapping
from pathlib import Path
from typing import Annotated, Any, Final, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from lineup.actors.kernel import ErrorCode, LineUpError
from lineup.actors.kernel.control import LandlockLayer, SandboxLayer, SandboxStatus, SeccompLayer
from lineup.facts.mcp import PROXY_FD_ENV

from . import _landlock, _seccomp
from ._readable import (
    bundled_rules,
    exec_rules,
    landlock_rules,
    own_module,
    path_entries,
    runtime_trees,
)
from ._report import CGROUP_JOINED, send_report

__all__ = [
    "LAYERS",
    "SandboxPolicy",
    "SandboxPolicyInvalid",
    "SandboxUnavailable",
    "app_data_dir",
    "is_sandboxed",
    "prepare_child",
    "probe_layers",
    "quota_policy",
    "sandbox_status",
    "warm",
]

log = logging.getLogger("lineup.sandbox")

Layer = Literal["netns", "landlock", "rlimits", "capabilities", "seccomp"]
LAYERS: Final[tuple[Layer, ...]] = ("netns", "landlock", "rlimits", "capabilities", "seccomp")
LANDLOCK_FULL_ABI: Final = 6  # filesystem + TCP + scopes: every Landlock layer the policy names

_CONTROL_FD: Final = 3  # the zygote's CONTROL_FD (it imports us, so not imported from it)
_SIOCGIFFLAGS: Final = 0x8913
_SIOCSIFFLAGS: Final = 0x8914
_IFF_UP: Final = 0x1
_IFREQ: Final = "16sh22x"  # struct ifreq: the name, then ifr_flags in the union (40 bytes)
_ENV_KEPT: Final = ("LINEUP_LOG", "LANG", "LC_ALL", "LC_CTYPE")  # no secrets in these
_PRELOAD: Final = ("lineup.sdk", "lineup.actors.kernel.actor")
_libc = ctypes.CDLL(None, use_errno=True)
_CLONE_NEWNET: Final = 0x40000000
_CLONE_NEWUSER: Final = 0x10000000
_PR_SET_DUMPABLE: Final = 4
_PR_CAPBSET_DROP: Final = 24
_PR_SET_SECUREBITS: Final = 28
_PR_SET_NO_NEW_PRIVS: Final = 38
_PR_CAP_AMBIENT: Final = 47
_PR_CAP_AMBIENT_CLEAR_ALL: Final = 4
_CAP_SYS_ADMIN: Final = 21
_LINUX_CAPABILITY_VERSION_3: Final = 0x20080522
# NOROOT, NO_SETUID_FIXUP, NO_CAP_AMBIENT_RAISE, each locked, and KEEP_CAPS locked off: uid 0
# can never regain capabilities, whatever it executes or setuid()s to.
_SECUREBITS_LOCKED_DOWN: Final = 0b1110_1111
_M_ARENA_MAX: Final = -8
_WARM: list[dict[str, bool | int]] = []  # what `warm` probed, in the zygote, for its children
_ENV_BLOCK: list[tuple[int, int]] = []  # and where its environment block is (`_env_block`)


class SandboxPolicy(BaseModel):
    """`boot["config"]["sandbox"]`: the confinement of one MiniApp process."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)

    profile: Literal["miniapp", "mcp"]
    app_scope: Annotated[str, Field(pattern=r"^[a-z][a-z0-9-]{0,62}$")]  # the manifest's rule
    data_dir: str | None = None  # the runtime's data dir; default: the child's boot data dir
    allow_weak: bool = False  # run with the layers this kernel has, instead of refusing
    memory_mb: Annotated[int, Field(ge=128, le=65536)] = 512  # RLIMIT_AS
    cpu_s: Annotated[int, Field(ge=1)] = 3600  # RLIMIT_CPU, per process lifetime
    files: Annotated[int, Field(ge=16, le=65536)] = 256  # RLIMIT_NOFILE
    tasks: Annotated[int, Field(ge=1)] = 1024  # RLIMIT_NPROC (every task of the uid; not root)
    # Bytes in its data dir: RLIMIT_FSIZE for any one file, and the supervisor's measure of the
    # whole directory (`_quota`), past which the app is stopped; and entries in it.
    disk_mb: Annotated[int, Field(ge=1, le=1 << 20)] = 256
    disk_entries: Annotated[int, Field(ge=16, le=1 << 20)] = 10_000
    threads: Annotated[int, Field(ge=8, le=1 << 16)] = 128  # pids.max of its pids cgroup
    pids_cgroup: str | None = None  # the cgroup the supervisor made for it (`_quota`), if any
    without: tuple[Layer, ...] = ()  # layers left off on purpose (tests, diagnosis)
    # `mcp` only: the files and folders the server may execute (read with them), absolute.
    exec_paths: tuple[Annotated[str, Field(pattern=r"^/")], ...] = ()
    # `mcp` only: a proxy listener in its namespace, the one port it may connect to (above).
    proxy: bool = False

    @model_validator(mode="after")
    def _exec_only_for_mcp(self) -> SandboxPolicy:
        if (self.exec_paths or self.proxy) and self.profile != "mcp":
            raise ValueError("exec_paths and proxy are for the mcp profile only")
        return self


class SandboxUnavailable(LineUpError):
    """This kernel lacks a layer the policy requires; `missing` names them."""

    def __init__(self, missing: tuple[str, ...]) -> None:
        self.missing = missing
        super().__init__(
            ErrorCode.INTERNAL_ERROR,
            f"sandbox layers unavailable: {', '.join(missing)} (allow_weak runs without them)",
        )


class SandboxPolicyInvalid(LineUpError):
    default_code = ErrorCode.INVALID_ARGUMENTS


def app_data_dir(data_dir: str | Path, app_scope: str) -> Path:
    """The one writable directory of a sandboxed MiniApp."""
    return Path(data_dir) / "apps" / app_scope


# ---------------------------------------------------------------------- what the kernel offers


def probe_layers() -> dict[str, bool | int]:
    """Which sandbox layers this kernel and process can apply. Applies nothing; never raises."""
    abi = _landlock.abi()
    return {
        "landlock_abi": abi,
        "landlock": abi >= 1,
        "landlock_net": abi >= 4,
        "landlock_scope": abi >= 6,
        "seccomp": _seccomp.available(),
        "seccomp_audit": _seccomp.notify_available(),  # denials answered by the supervisor
        "netns": _can_enter_netns(),
        "rlimits": True,  # POSIX; every Linux has them
        "capabilities": True,  # dropping is always permitted
        # A network namespace needs no user namespace (`_own_network`).
        "sys_admin": bool(_effective_caps() & (1 << _CAP_SYS_ADMIN)),
    }


def missing_layers(layers: dict[str, bool | int]) -> tuple[Layer, ...]:
    """The layers MiniApps need that `layers` (from `probe_layers`) lacks."""
    found: dict[Layer, bool] = {
        "netns": bool(layers["netns"]),
        "landlock": int(layers["landlock_abi"]) >= LANDLOCK_FULL_ABI,
        "rlimits": bool(layers["rlimits"]),
        "capabilities": bool(layers["capabilities"]),
        "seccomp": bool(layers["seccomp"]),
    }
    return tuple(layer for layer in LAYERS if not found[layer])


def sandbox_status(layers: dict[str, bool | int] | None = None) -> SandboxStatus:
    """`layers` (default: `probe_layers()`) as `lineup status` reports them, one object a layer."""
    layers = probe_layers() if layers is None else layers
    return SandboxStatus(
        netns=SandboxLayer(available=bool(layers["netns"])),
        landlock=LandlockLayer(
            available=bool(layers["landlock"]),
            abi=int(layers["landlock_abi"]),
            network=bool(layers["landlock_net"]),
            scopes=bool(layers["landlock_scope"]),
        ),
        rlimits=SandboxLayer(available=bool(layers["rlimits"])),
        capabilities=SandboxLayer(available=bool(layers["capabilities"])),
        seccomp=SeccompLayer(
            available=bool(layers["seccomp"]), audit=bool(layers["seccomp_audit"])
        ),
        missing=missing_layers(layers),
    )


def _status(field: str) -> str:
    for line in Path("/proc/self/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name == field:
            return value.strip()
    return "0"


def _effective_caps() -> int:
    return int(_status("CapEff"), 16)


def _can_enter_netns() -> bool:
    if not os.path.exists("/proc/self/ns/net"):
        return False
    if _effective_caps() & (1 << _CAP_SYS_ADMIN):
        return True
    try:  # without CAP_SYS_ADMIN: through an unprivileged user namespace, if allowed
        return int(Path("/proc/sys/user/max_user_namespaces").read_text()) > 0
    except (OSError, ValueError):
        return False


# ---------------------------------------------------------------------- applying it


def warm(boot: Mapping[str, Any] | None = None) -> None:
    """Do in the zygote before it forks what `prepare_child` would otherwise do again in each
    child. Once (~3.5 ms of a sandboxed fork → ready): build the policy's validator, probe the
    kernel's layers (the kernel and the capabilities a child has are its zygote's), find the
    environment block (a child's is where its zygote's is) and resolve the interpreter's path
    and the runtime's readable code. With `boot` (a sandboxed child's,
    about to be forked), once per data dir and app (~1 ms): a bundled app's Landlock rules.
    Applies nothing; never raises (a child whose boot is wrong finds it, and says so, itself).
    """
    if not _WARM:
        SandboxPolicy.model_rebuild(force=True)
        _WARM[:] = [probe_layers()]
        _ENV_BLOCK[:] = [_env_block()]
        runtime_trees(tuple(sys.path))
        path_entries(tuple(sys.path))
    if boot is None:
        return
    config = boot.get("config") or {}
    try:
        policy = SandboxPolicy.model_validate(config.get("sandbox"))
        data_dir = Path(policy.data_dir or boot["data_dir"]).resolve()
        if config.get("app_path"):
            return  # its path differs from ours: its child resolves its own
        home = app_data_dir(data_dir, policy.app_scope)
        bundled_rules(data_dir, home, own_module(config, str(boot["target"])), tuple(sys.path))
    except (ValidationError, KeyError, TypeError, ValueError, OSError):
        return


def is_sandboxed(config: Mapping[str, Any]) -> bool:
    """Whether a child with this config gets the sandbox (and so sends its report first)."""
    return config.get("sandbox") is not None


def quota_policy(config: Mapping[str, Any]) -> SandboxPolicy | None:
    """The policy in a child's config, for the supervisor's side of its quotas; None for a
    child with none, or with one it will refuse itself (`prepare_child`)."""
    raw = config.get("sandbox")
    if raw is None:
        return None
    try:
        return SandboxPolicy.model_validate(raw)
    except ValidationError:
        return None


def prepare_child(boot: dict[str, Any], *, report_to: int | None = None) -> None:
    """Apply the sandbox named in the child's boot config, or nothing if it names none.

    With `report_to` (the control channel's descriptor), seccomp denials are notified, and the
    listener is sent there (`send_report`) and closed here before this returns; without, the
    filter fails denied calls in the kernel and nothing is sent.

    Raises SandboxPolicyInvalid for a malformed policy and SandboxUnavailable when a required
    layer is missing (the child then exits before running any actor code). Never returns to a
    half-applied sandbox silently: any failure while applying raises.
    """
    config = boot.get("config") or {}
    app_path = config.get("app_path")
    if isinstance(app_path, str) and app_path:
        # A development app (`lineup run --dev-app`): its folder's parent goes on the path, so
        # the app's package is found (and granted read-only below) like a bundled one.
        sys.path.insert(0, app_path)
    raw = config.get("sandbox")
    if raw is None:
        return
    try:
        policy = SandboxPolicy.model_validate(raw)
    except ValidationError as exc:
        raise SandboxPolicyInvalid(message=str(exc.errors(include_url=False))[:500]) from None
    probed = _WARM[0] if _WARM else probe_layers()
    missing = tuple(layer for layer in missing_layers(probed) if layer not in policy.without)
    if missing and not policy.allow_weak:
        raise SandboxUnavailable(missing)
    layers = {layer for layer in LAYERS if layer not in policy.without and layer not in missing}
    if missing or policy.without:
        log.warning(
            "sandbox.weak app_scope=%s missing=%s without=%s",
            policy.app_scope,
            ",".join(missing),
            ",".join(policy.without),
        )

    # Landlock binds the calling thread and its future threads only: there must be no other.
    if len(os.listdir("/proc/self/task")) != 1:
        raise RuntimeError("the sandbox must be applied before any thread starts")
    _leave_terminal()
    if policy.pids_cgroup is not None and report_to is None:
        _join_cgroup(Path(policy.pids_cgroup))  # else the supervisor moves it (see below)
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # past RLIMIT_FSIZE: EFBIG, not death
    _preload(str(boot["target"]))
    data_dir = Path(policy.data_dir or boot["data_dir"]).resolve()
    home = app_data_dir(data_dir, policy.app_scope)
    home.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chdir(home)
    _scrub_environment(home)
    os.closerange(_CONTROL_FD + 1, resource.getrlimit(resource.RLIMIT_NOFILE)[0])
    sys.dont_write_bytecode = True  # __pycache__ is read-only now: do not try, do not log
    # Every thread's malloc arena reserves 64 MiB of address space, which RLIMIT_AS counts.
    _libc.mallopt(_M_ARENA_MAX, 2)
    # Not dumpable: no core dump (a piped core_pattern ignores RLIMIT_CORE) and no ptrace or
    # /proc access by processes of the same uid.
    _libc.prctl(_PR_SET_DUMPABLE, 0, 0, 0, 0)

    sys_admin = bool(probed.get("sys_admin"))
    proxy_port = _own_network(policy, sys_admin=sys_admin) if "netns" in layers else None
    _check(_libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    if "landlock" in layers or ("landlock" in missing and _landlock.abi() >= 1):
        rules = landlock_rules(data_dir, home, config, str(boot["target"]))
        _landlock.restrict_self(
            [*rules, *exec_rules(policy.exec_paths)],
            connect_ports=() if proxy_port is None else (proxy_port,),
        )
    if "rlimits" in layers:
        _set_rlimits(policy)
    if "capabilities" in layers:
        _drop_capabilities()
    _seccomp_and_report(
        seccomp="seccomp" in layers,
        spawn=policy.profile == "mcp",
        net=proxy_port is not None,
        report_to=report_to,
        wait_for_cgroup=policy.pids_cgroup is not None,
    )


def _own_network(policy: SandboxPolicy, *, sys_admin: bool) -> int | None:
    """Enter a network namespace of its own; with `proxy`, open the proxy there (its port)."""
    try:
        _enter_netns(user_namespace=not sys_admin)
    except OSError as exc:  # e.g. a distribution that fences off user namespaces
        if not policy.allow_weak:
            raise SandboxUnavailable(("netns",)) from exc
        log.warning("sandbox.weak app_scope=%s missing=netns", policy.app_scope)
        return None
    return _open_proxy() if policy.proxy else None


def _open_proxy() -> int:
    """In the new network namespace (whose capabilities it still has): the loopback up, and a
    listening socket on 127.0.0.1, its descriptor and port left in `$LINEUP_MCP_PROXY_FD`.
    Returns the port."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as control:
        asked = fcntl.ioctl(control, _SIOCGIFFLAGS, struct.pack(_IFREQ, b"lo", 0))
        flags = struct.unpack(_IFREQ, asked)[1]
        fcntl.ioctl(control, _SIOCSIFFLAGS, struct.pack(_IFREQ, b"lo", flags | _IFF_UP))
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)  # close-on-exec, as always
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    port = int(listener.getsockname()[1])
    os.environ[PROXY_FD_ENV] = f"{listener.detach()}:{port}"
    return port


def _seccomp_and_report(
    *, seccomp: bool, spawn: bool, net: bool, report_to: int | None, wait_for_cgroup: bool
) -> None:
    notify = report_to is not None and _seccomp.notify_available()
    listener = _seccomp.install(notify=notify, spawn=spawn, net=net) if seccomp else None
    if report_to is not None:
        try:
            send_report(report_to, listener)
        finally:
            if listener is not None:
                os.close(listener)  # never left to the app: see _seccomp
        if wait_for_cgroup:
            _wait_for_cgroup(report_to)


def _wait_for_cgroup(channel_fd: int) -> None:
    """Wait for the supervisor's word that this process is in its pids cgroup. Moving a
    process between cgroups waits for an RCU grace period (over 10 ms on cgroup v1), so the
    supervisor does it while this process applies its sandbox, and no app code runs before."""
    with socket.socket(fileno=os.dup(channel_fd)) as channel:
        channel.setblocking(True)
        if channel.recv(1) != CGROUP_JOINED:
            raise RuntimeError("the supervisor did not put this process in its pids cgroup")


def _check(result: int, what: str) -> None:
    if result < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _preload(target: str) -> None:
    """Import the host (trusted runtime code) while imports may still run helper programs."""
    for module in (*_PRELOAD, target.partition(":")[0]):
        importlib.import_module(module)


def _scrub_environment(home: Path) -> None:
    """Leave only harmless variables, and wipe the inherited block from memory: the kernel
    serves /proc/<pid>/environ from it, and a same-uid reader would otherwise find the
    runtime's secrets there."""
    kept = {key: os.environ[key] for key in _ENV_KEPT if key in os.environ}
    for key in list(os.environ):  # not .clear(): a copy of every key per key it pops
        del os.environ[key]
    posix.environ.clear()  # CPython's start-up copy, from which os.environ was built
    _libc.clearenv()  # glibc's array still points into the block: detach it first
    # Where the block is: a forked child's is its zygote's, read there once (`warm`).
    env_start, env_end = _ENV_BLOCK[0] if _ENV_BLOCK else _env_block()
    if 0 < env_start < env_end:
        ctypes.memset(env_start, 0, env_end - env_start)
    os.environ.update(kept, HOME=str(home), TMPDIR=str(home), PATH="/usr/bin:/bin")


def _env_block() -> tuple[int, int]:
    """Where this process's inherited environment block is (start, end)."""
    fields = Path("/proc/self/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[47]), int(fields[48])  # stat fields 50 and 51


def _enter_netns(*, user_namespace: bool) -> None:
    """A network namespace of our own: only a loopback, and it is down. Without
    CAP_SYS_ADMIN, inside a new user namespace that maps our uid and gid to themselves."""
    if not user_namespace:
        _check(_libc.unshare(_CLONE_NEWNET), "unshare(CLONE_NEWNET)")
        return
    uid, gid = os.getuid(), os.getgid()
    _check(_libc.unshare(_CLONE_NEWUSER | _CLONE_NEWNET), "unshare(CLONE_NEWUSER|CLONE_NEWNET)")
    for name, text in (
        ("setgroups", "deny"),
        ("uid_map", f"{uid} {uid} 1"),
        ("gid_map", f"{gid} {gid} 1"),
    ):
        fd = os.open(f"/proc/self/{name}", os.O_WRONLY | os.O_CLOEXEC)
        try:
            os.write(fd, text.encode())
        finally:
            os.close(fd)


def _leave_terminal() -> None:
    """No terminal for a MiniApp: stdin from /dev/null, and any of stdout and stderr that is a
    tty goes to /dev/null too (the supervisor gives them pipes; see `_applog`), and if the
    process still has a controlling terminal (the zygote's `setsid` leaves none), it drops it."""
    null = os.open(os.devnull, os.O_RDWR | os.O_CLOEXEC)
    try:
        os.dup2(null, 0)
        for fd in (1, 2):
            if os.isatty(fd):
                os.dup2(null, fd)
    finally:
        os.close(null)
    try:
        tty = os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY | os.O_CLOEXEC)
    except OSError:
        return  # ENXIO: no controlling terminal
    # A session leader that drops its terminal sends SIGHUP to its foreground group: itself.
    hangup = signal.signal(signal.SIGHUP, signal.SIG_IGN)
    try:
        _libc.ioctl(tty, termios.TIOCNOTTY)
    finally:
        os.close(tty)
        signal.signal(signal.SIGHUP, hangup)
    try:
        os.close(os.open("/dev/tty", os.O_RDWR | os.O_NOCTTY | os.O_CLOEXEC))
    except OSError:
        return
    raise RuntimeError("a sandboxed process must have no controlling terminal")


def _join_cgroup(cgroup: Path) -> None:
    """Move this process (single-threaded still) into its pids cgroup, made by the supervisor."""
    fd = os.open(cgroup / "cgroup.procs", os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.write(fd, str(os.getpid()).encode())
    finally:
        os.close(fd)


def _set_rlimits(policy: SandboxPolicy) -> None:
    # An MCP server may be V8, which reserves address space it never touches: RLIMIT_DATA
    # bounds what is writable (the module's docstring).
    memory = resource.RLIMIT_DATA if policy.profile == "mcp" else resource.RLIMIT_AS
    limits = {
        memory: (policy.memory_mb << 20,) * 2,
        resource.RLIMIT_NOFILE: (policy.files,) * 2,
        # Counts every task of the uid and never binds uid 0: seccomp is what stops forks.
        resource.RLIMIT_NPROC: (policy.tasks,) * 2,
        # SIGXCPU at the soft limit, SIGKILL a second later if that is caught.
        resource.RLIMIT_CPU: (policy.cpu_s, policy.cpu_s + 1),
        resource.RLIMIT_FSIZE: (policy.disk_mb << 20,) * 2,
        resource.RLIMIT_CORE: (0, 0),
    }
    for which, (soft, hard) in limits.items():
        ceiling = resource.getrlimit(which)[1]  # a hard limit can only go down
        if ceiling == resource.RLIM_INFINITY:
            ceiling = hard
        resource.setrlimit(which, (min(soft, ceiling), min(hard, ceiling)))


class _CapHeader(ctypes.Structure):
    _fields_ = (("version", ctypes.c_uint32), ("pid", ctypes.c_int))


class _CapData(ctypes.Structure):
    _fields_ = (
        ("effective", ctypes.c_uint32),
        ("permitted", ctypes.c_uint32),
        ("inheritable", ctypes.c_uint32),
    )


def _drop_capabilities() -> None:
    """Empty the bounding set and lock the securebits while CAP_SETPCAP allows it (a non-root
    runtime has neither to drop), clear ambient, then drop effective/permitted/inheritable."""
    for cap in range(64):
        if _libc.prctl(_PR_CAPBSET_DROP, cap, 0, 0, 0) < 0:
            break  # EINVAL: past the last capability; EPERM: no CAP_SETPCAP, nothing to drop
    locked = _libc.prctl(_PR_SET_SECUREBITS, _SECUREBITS_LOCKED_DOWN, 0, 0, 0)
    if locked < 0 and ctypes.get_errno() != errno.EPERM:  # EPERM: no CAP_SETPCAP to lock with
        _check(locked, "securebits")
    _check(_libc.prctl(_PR_CAP_AMBIENT, _PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0), "ambient caps")
    header = _CapHeader(_LINUX_CAPABILITY_VERSION_3, 0)
    data = (_CapData * 2)()
    _check(_libc.capset(ctypes.byref(header), data), "capset")
