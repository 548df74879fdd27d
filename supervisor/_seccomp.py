"""The MiniApp seccomp filter: classic BPF written out by hand, loaded with seccomp(2).

Theory of operation
-------------------
A deny-list, not an allow-list. By the time the filter goes on, the process has no capabilities
(so every privileged call already fails), no writable path but its data directory, no TCP and
no signals outside itself (Landlock). What is left for the filter is what an *unprivileged*
process may still do and a MiniApp must not: open sockets, start processes or programs, look
into other processes, change namespaces, and reach the kernel interfaces that are large attack
surface and that a Python app never needs. An allow-list would also have to track every call
CPython, glibc, trio and the app's pure-Python dependencies make on every code path, and one
miss kills an app in production on a rare path; what the deny-list lets through is what any
unprivileged process confined by Landlock and rlimits may do anyway.

The program is built once per process image (the zygote imports this module) and loaded in each
child with one system call. Every instruction sequence stays within 8-bit jump offsets: a rule
is "jeq nr → next instruction returns; else skip it", so the table can grow freely.

Denials are audited without trusting the app (`install(notify=True)`): a denied call then
returns SECCOMP_RET_USER_NOTIF instead of an errno, and the filter's listener descriptor is
handed to the supervisor before any MiniApp code runs. The supervisor reads each notification
(which call, from which process: never its arguments), writes the audit row and answers with
`DENIED_ERRNO`, so the app sees exactly what an errno filter would give it. Allowed calls never
leave the kernel: only the deny branches notify. If nobody holds the listener (the supervisor
died), the kernel fails a denied call with ENOSYS: still denied. The process must not keep the
listener: with it, it could answer its own notifications with SECCOMP_USER_NOTIF_FLAG_CONTINUE.

An MCP app's process (`spawn=True`) starts its one MCP server: for it, and only for it, the
filter lets fork, vfork, execve and execveat through, and clone without namespace flags; every
other rule holds, for the adapter and for the server (a filter is inherited and irrevocable).
What the server may execute is Landlock's to say (the execute right, granted on its interpreter
and its own folder alone), how many tasks it may be the pids cgroup's and RLIMIT_NPROC's.

An MCP server that declares hosts (`net=True`, with `spawn`: `lineup.sdk.mcp_network`'s
design, step 1) may also open TCP sockets, `socket` being checked by its arguments (AF_INET or
AF_INET6, SOCK_STREAM), connect them, and accept: what they may reach is the network
namespace's (a loopback) and Landlock's (the proxy's one port) to say. bind and listen stay
denied: its proxy's listening socket is made before the filter goes on.

Only x86_64 has a table (`SUPPORTED`); elsewhere the sandbox reports the layer as missing.
"""

from __future__ import annotations

import ctypes
import errno
import fcntl
import os
import struct
from typing import Final

__all__ = [
    "DENIED_ERRNO",
    "NOTIFY_SIZE",
    "SUPPORTED",
    "SeccompError",
    "answer",
    "available",
    "install",
    "notify_available",
    "read_notification",
    "syscall_name",
]

_libc = ctypes.CDLL(None, use_errno=True)

SUPPORTED: Final = os.uname().machine == "x86_64"
_SYS_SECCOMP: Final = 317
_SECCOMP_SET_MODE_FILTER: Final = 1
_SECCOMP_GET_ACTION_AVAIL: Final = 2
_SECCOMP_FILTER_FLAG_TSYNC: Final = 1  # every thread, or fail: none may escape the filter
_SECCOMP_FILTER_FLAG_NEW_LISTENER: Final = 8
_SECCOMP_FILTER_FLAG_TSYNC_ESRCH: Final = 16  # lets TSYNC go with NEW_LISTENER (the fd is returned)
_PR_GET_SECCOMP: Final = 21

_AUDIT_ARCH_X86_64: Final = 0xC000003E
_X32_SYSCALL_BIT: Final = 0x40000000

_RET_KILL_PROCESS: Final = 0x80000000
_RET_USER_NOTIF: Final = 0x7FC00000
_RET_ERRNO: Final = 0x00050000
_RET_ALLOW: Final = 0x7FFF0000

# struct seccomp_data: int nr; u32 arch; u64 instruction_pointer; u64 args[6] (little endian:
# the low 32 bits of args[i] are at 16 + 8 i).
_NR: Final = 0
_ARCH: Final = 4


def _arg(i: int) -> int:
    return 16 + 8 * i


# Classic BPF opcodes.
_LD_W_ABS: Final = 0x20
_JEQ_K: Final = 0x15
_JGE_K: Final = 0x35
_AND_K: Final = 0x54
_RET_K: Final = 0x06

_Insn = tuple[int, int, int, int]  # code, jt, jf, k


def _ld(offset: int) -> _Insn:
    return (_LD_W_ABS, 0, 0, offset)


def _ret(action: int) -> _Insn:
    return (_RET_K, 0, 0, action)


DENIED_ERRNO: Final = errno.EPERM  # what every denied call returns, notified or not
_NOTIFY = -1  # a `_deny` marker: resolved to RET_USER_NOTIF or RET_ERRNO when the program is built


def _deny(err: int = _NOTIFY) -> _Insn:
    """Refuse the call: with `DENIED_ERRNO`, through the supervisor when notifying (and audited
    there), or with `err` straight from the kernel (never audited: see clone3)."""
    return _ret(_NOTIFY if err == _NOTIFY else _RET_ERRNO | err)


# x86_64 numbers (arch/x86/entry/syscalls/syscall_64.tbl). Every call here fails with EPERM.
_SPAWN: Final = frozenset({"fork", "vfork", "execve", "execveat"})  # what `spawn` lets through
_NET: Final = frozenset({"socket", "connect", "accept", "accept4"})  # ... `net`: socket by its args
_DENIED: Final = {
    # No new sockets, no new connections: a MiniApp talks to the runtime over the channels it
    # was given, and to nothing else. (socketpair is filtered by its arguments, below.)
    "socket": 41,
    "connect": 42,
    "accept": 43,
    "bind": 49,
    "listen": 50,
    "accept4": 288,
    # No new processes, no other programs (threads are allowed: see clone below).
    "fork": 57,
    "vfork": 58,
    "execve": 59,
    "execveat": 322,
    # Nothing that reads or writes another process (Landlock already refuses these across
    # domains; denying them outright also closes them inside one).
    "ptrace": 101,
    "process_vm_readv": 310,
    "process_vm_writev": 311,
    "process_madvise": 440,
    "pidfd_getfd": 438,
    "kcmp": 312,
    "migrate_pages": 256,
    "move_pages": 279,
    # No namespace or mount changes: an unprivileged user namespace would hand the process a
    # fresh set of capabilities to attack the kernel with.
    "unshare": 272,
    "setns": 308,
    "mount": 165,
    "umount2": 166,
    "pivot_root": 155,
    "chroot": 161,
    "open_tree": 428,
    "move_mount": 429,
    "fsopen": 430,
    "fsconfig": 431,
    "fsmount": 432,
    "fspick": 433,
    "mount_setattr": 442,
    # Large kernel attack surface, never needed by a Python app. io_uring in particular runs
    # socket and file operations that this filter would never see.
    "bpf": 321,
    "perf_event_open": 298,
    "userfaultfd": 323,
    "io_uring_setup": 425,
    "io_uring_enter": 426,
    "io_uring_register": 427,
    "keyctl": 250,
    "add_key": 248,
    "request_key": 249,
    "fanotify_init": 300,
    "name_to_handle_at": 303,
    "open_by_handle_at": 304,
    "personality": 135,  # e.g. turning address-space randomisation off
    "uselib": 134,
    "lookup_dcookie": 212,
    # Whole-system operations: capabilities already refuse them; listed so that a mistake in
    # dropping capabilities cannot reopen them.
    "kexec_load": 246,
    "kexec_file_load": 320,
    "init_module": 175,
    "finit_module": 313,
    "delete_module": 176,
    "reboot": 169,
    "swapon": 167,
    "swapoff": 168,
    "acct": 163,
    "settimeofday": 164,
    "clock_settime": 227,
    "clock_adjtime": 305,
    "adjtimex": 159,
    "sethostname": 170,
    "setdomainname": 171,
    "iopl": 172,
    "ioperm": 173,
    "syslog": 103,
    "quotactl": 179,
    "quotactl_fd": 443,
    "vhangup": 153,
}

# Calls allowed only on the calling process (pid/who argument 0). Same-uid checks would let a
# MiniApp running as the runtime's user lower the supervisor's file limit or renice it.
_SELF_ONLY: Final = {
    "prlimit64": (302, 0),  # (nr, index of the pid argument)
    "sched_setaffinity": (203, 0),
    "sched_setparam": (142, 0),
    "sched_setscheduler": (144, 0),
    "sched_setattr": (314, 0),
}
_SYS_SETPRIORITY: Final = 141  # (which, who, prio): only PRIO_PROCESS of self
_SYS_IOPRIO_SET: Final = 251  # (which, who, ioprio): only IOPRIO_WHO_PROCESS of self
_IOPRIO_WHO_PROCESS: Final = 1

_SYS_CLONE: Final = 56
_SYS_CLONE3: Final = 435
_SYS_SOCKETPAIR: Final = 53
_SYS_IOCTL: Final = 16

_CLONE_THREAD: Final = 0x00010000
_CLONE_NEW_NAMESPACES: Final = (
    0x00020000  # CLONE_NEWNS
    | 0x02000000  # CLONE_NEWCGROUP
    | 0x04000000  # CLONE_NEWUTS
    | 0x08000000  # CLONE_NEWIPC
    | 0x10000000  # CLONE_NEWUSER
    | 0x20000000  # CLONE_NEWPID
    | 0x40000000  # CLONE_NEWNET
)
_AF_UNIX: Final = 1
_AF_INET: Final = 2
_AF_INET6: Final = 10
_SYS_SOCKET: Final = 41
_SOCK_STREAM: Final = 1
_SOCK_FLAGS: Final = 0o4000 | 0o2000000  # SOCK_NONBLOCK | SOCK_CLOEXEC
_TIOCSTI: Final = 0x5412  # push bytes into a terminal's input: typing into the user's shell
_TIOCLINUX: Final = 0x541C  # the console's selection paste does the same


def _program(*, notify: bool, spawn: bool = False, net: bool = False) -> list[_Insn]:
    deny = _RET_USER_NOTIF if notify else _RET_ERRNO | DENIED_ERRNO
    return [
        (code, jt, jf, deny if (code, k) == (_RET_K, _NOTIFY) else k)
        for code, jt, jf, k in _rules(spawn=spawn, net=net)
    ]


def _rules(*, spawn: bool = False, net: bool = False) -> list[_Insn]:
    prog: list[_Insn] = [
        # Another ABI's numbering (i386 via int 0x80) would make every rule below meaningless.
        _ld(_ARCH),
        (_JEQ_K, 1, 0, _AUDIT_ARCH_X86_64),
        _ret(_RET_KILL_PROCESS),
        _ld(_NR),
        # x32 calls share the architecture but not the numbers.
        (_JGE_K, 0, 1, _X32_SYSCALL_BIT),
        _ret(_RET_KILL_PROCESS),
    ]
    if net:
        # socket: a TCP socket of either family, nothing else (no raw, no UDP, no netlink).
        prog += _when(
            _SYS_SOCKET,
            _ld(_arg(0)),
            (_JEQ_K, 1, 0, _AF_INET),
            (_JEQ_K, 0, 3, _AF_INET6),
            _ld(_arg(1)),
            (_AND_K, 0, 0, 0xFFFFFFFF & ~_SOCK_FLAGS),
            (_JEQ_K, 1, 0, _SOCK_STREAM),
            _deny(),
            _ret(_RET_ALLOW),
        )
    for name, nr in _DENIED.items():
        if not (spawn and name in _SPAWN) and not (net and name in _NET):
            prog += [(_JEQ_K, 0, 1, nr), _deny()]
    # glibc creates threads with clone3 and falls back to clone on ENOSYS; clone3 takes its
    # flags in memory, where a filter cannot look, so it is refused as "not implemented" by the
    # kernel itself: every new thread asks, so this one is neither notified nor audited.
    prog += [(_JEQ_K, 0, 1, _SYS_CLONE3), _deny(errno.ENOSYS)]
    # clone: threads (trio's worker threads) yes; a new process (but with `spawn`) or
    # namespace, no.
    prog += _when(
        _SYS_CLONE,
        _ld(_arg(0)),
        (_AND_K, 0, 0, (0 if spawn else _CLONE_THREAD) | _CLONE_NEW_NAMESPACES),
        (_JEQ_K, 1, 0, 0 if spawn else _CLONE_THREAD),
        _deny(),
        _ret(_RET_ALLOW),
    )
    # socketpair: only a connected pair of Unix stream sockets (trio's wakeup pair). A datagram
    # pair could later be pointed at any socket path with sendto.
    prog += _when(
        _SYS_SOCKETPAIR,
        _ld(_arg(0)),
        (_JEQ_K, 0, 3, _AF_UNIX),
        _ld(_arg(1)),
        (_AND_K, 0, 0, 0xFFFFFFFF & ~_SOCK_FLAGS),
        (_JEQ_K, 1, 0, _SOCK_STREAM),
        _deny(),
        _ret(_RET_ALLOW),
    )
    prog += _when(
        _SYS_IOCTL,
        _ld(_arg(1)),
        (_JEQ_K, 1, 0, _TIOCSTI),
        (_JEQ_K, 0, 1, _TIOCLINUX),
        _deny(),
        _ret(_RET_ALLOW),
    )
    for nr, pid_arg in _SELF_ONLY.values():
        prog += _self_only(nr, (pid_arg, 0))
    prog += _self_only(_SYS_SETPRIORITY, (0, 0), (1, 0))  # PRIO_PROCESS == 0
    prog += _self_only(_SYS_IOPRIO_SET, (0, _IOPRIO_WHO_PROCESS), (1, 0))
    prog.append(_ret(_RET_ALLOW))
    return prog


def _when(nr: int, *body: _Insn) -> list[_Insn]:
    """Run `body` (which must end every path in a return) for system call `nr` only."""
    return [(_JEQ_K, 0, len(body), nr), *body]


def _self_only(nr: int, *equal: tuple[int, int]) -> list[_Insn]:
    """`nr` is allowed only when each (argument, value) pair holds. These arguments are C ints
    (pid_t, id_t): the kernel reads their low 32 bits only, and so does the check."""
    checks: list[_Insn] = []
    for index, value in equal:
        checks += [_ld(_arg(index)), (_JEQ_K, 0, 0, value)]
    body = [*checks, _ret(_RET_ALLOW), _deny()]
    deny_at = len(body) - 1
    for i, (code, _jt, _jf, k) in enumerate(body):
        if code == _JEQ_K:  # a failed comparison jumps to the deny at the end
            body[i] = (code, 0, deny_at - i - 1, k)
    return _when(nr, *body)


class _SockFprog(ctypes.Structure):
    _fields_ = (("len", ctypes.c_ushort), ("filter", ctypes.c_void_p))


def _assemble(program: list[_Insn]) -> bytes:
    assert len(program) <= 4096  # BPF_MAXINSNS
    return b"".join(struct.pack("=HBBI", *insn) for insn in program)


_PROGRAMS: Final = (
    {
        (notify, spawn, net): _assemble(_program(notify=notify, spawn=spawn, net=net))
        for notify in (False, True)
        for spawn in (False, True)
        for net in (False, True)
        if spawn or not net  # `net` is an MCP server's only
    }
    if SUPPORTED
    else {}
)
_INSN_SIZE: Final = 8

_NAMES: Final = {
    **{nr: name for name, nr in _DENIED.items()},
    **{nr: name for name, (nr, _) in _SELF_ONLY.items()},
    _SYS_SETPRIORITY: "setpriority",
    _SYS_IOPRIO_SET: "ioprio_set",
    _SYS_CLONE: "clone",
    _SYS_SOCKETPAIR: "socketpair",
    _SYS_IOCTL: "ioctl",
}


class SeccompError(OSError):
    """The kernel refused the filter (or has no seccomp filtering here)."""


def _action_available(action: int) -> bool:
    value = ctypes.c_uint32(action)
    probe = _libc.syscall(_SYS_SECCOMP, _SECCOMP_GET_ACTION_AVAIL, 0, ctypes.byref(value))
    return bool(probe == 0)


def available() -> bool:
    """True if this kernel and architecture can take the filter (nothing is applied)."""
    if not SUPPORTED or _libc.prctl(_PR_GET_SECCOMP, 0, 0, 0, 0) < 0:
        return False
    return _action_available(_RET_ERRNO)


def notify_available() -> bool:
    """True if denials can go through the supervisor (SECCOMP_RET_USER_NOTIF, Linux 5.0+)."""
    return available() and _action_available(_RET_USER_NOTIF)


def install(*, notify: bool = False, spawn: bool = False, net: bool = False) -> int | None:
    """Load the filter on this (single-threaded) process. Needs no_new_privs. Irrevocable.
    With `spawn` (an MCP app's), it may start processes and programs, and with `net` too,
    open and connect TCP sockets (the module's docstring).

    With `notify`, returns the listener descriptor (close-on-exec), which the caller must hand
    to its auditor and close before running untrusted code; until someone reads it, a denied
    call blocks. Without, denied calls fail in the kernel and None is returned.
    """
    if not SUPPORTED:
        raise SeccompError(errno.ENOSYS, "no seccomp table for this architecture")
    code = _PROGRAMS[(notify, spawn, net)]
    buffer = ctypes.create_string_buffer(code, len(code))
    prog = _SockFprog(len(code) // _INSN_SIZE, ctypes.cast(buffer, ctypes.c_void_p))
    flags = _SECCOMP_FILTER_FLAG_TSYNC
    if notify:
        flags |= _SECCOMP_FILTER_FLAG_NEW_LISTENER | _SECCOMP_FILTER_FLAG_TSYNC_ESRCH
    result = _libc.syscall(_SYS_SECCOMP, _SECCOMP_SET_MODE_FILTER, flags, ctypes.byref(prog))
    # Without a listener, 0 is success and a positive result the id of a thread that could not
    # sync (TSYNC); with one, the result is the listener and a sync failure is ESRCH.
    if result < 0 or (result > 0 and not notify):
        err = ctypes.get_errno() if result < 0 else errno.ESRCH
        raise SeccompError(err, f"seccomp: {os.strerror(err)}")
    return int(result) if notify else None


# ---------------------------------------------------------------------- the supervisor's side

# struct seccomp_notif { u64 id; u32 pid; u32 flags; struct seccomp_data data; } (80 bytes) and
# struct seccomp_notif_resp { u64 id; s64 val; s32 error; u32 flags; } (24 bytes).
NOTIFY_SIZE: Final = 80
_NOTIF: Final = struct.Struct("=QIIi")  # id, pid, flags, data.nr (what is read; never args)
_RESP: Final = struct.Struct("=QqiI")
_IOCTL_NOTIF_RECV: Final = 0xC0502100  # _IOWR('!', 0, struct seccomp_notif)
_IOCTL_NOTIF_SEND: Final = 0xC0182101  # _IOWR('!', 1, struct seccomp_notif_resp)


def read_notification(listener: int) -> tuple[int, int, int] | None:
    """(notification id, pid, system call number) of the next denied call, or None when the
    caller vanished in the meantime. Blocks if none is pending: poll the listener first."""
    buffer = bytearray(NOTIFY_SIZE)  # the kernel wants it zeroed
    try:
        fcntl.ioctl(listener, _IOCTL_NOTIF_RECV, buffer, True)
    except OSError as exc:
        if exc.errno in (errno.ENOENT, errno.EINTR):  # interrupted by a signal, or killed
            return None
        raise
    notification_id, pid, _flags, nr = _NOTIF.unpack_from(buffer)
    return notification_id, pid, nr


def answer(listener: int, notification_id: int) -> None:
    """Fail the notified call with `DENIED_ERRNO`. A caller that is gone meanwhile is ignored."""
    response = bytearray(_RESP.pack(notification_id, 0, -DENIED_ERRNO, 0))
    try:
        fcntl.ioctl(listener, _IOCTL_NOTIF_SEND, response, True)
    except OSError as exc:
        if exc.errno != errno.ENOENT:
            raise


def syscall_name(nr: int) -> str:
    """The name of a denied system call (only numbers this filter denies have names)."""
    return _NAMES.get(nr, f"nr_{nr}")
