"""Landlock through its three system calls (ctypes; no library exists for it in the stdlib).

Theory of operation
-------------------
A ruleset names the rights it *handles*; whatever it handles and no rule grants is denied, for
this process and every thread it creates, for good. The sandbox handles every filesystem right
this kernel knows, both TCP rights (and grants no port: all TCP bind and connect is denied) and
both scopes (abstract Unix sockets and signals cannot reach outside the process's own domain),
then grants read access beneath a few paths and full access beneath one. Landlock only ever
allows: to keep a path out of a granted tree, grant the tree's other branches instead (`carve`).

Rights newer than the running kernel's ABI are masked off (best effort); whether that is
acceptable is the caller's decision (`abi()` says what there is).
"""

from __future__ import annotations

import ctypes
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Final

__all__ = [
    "FS_READ",
    "FS_WRITE_TREE",
    "LandlockError",
    "Rule",
    "abi",
    "carve",
    "restrict_self",
]

_libc = ctypes.CDLL(None, use_errno=True)

# The same numbers on every architecture (they postdate the unified syscall table).
_SYS_CREATE_RULESET: Final = 444
_SYS_ADD_RULE: Final = 445
_SYS_RESTRICT_SELF: Final = 446
_CREATE_RULESET_VERSION: Final = 1 << 0
_RULE_PATH_BENEATH: Final = 1
_RULE_NET_PORT: Final = 2  # ABI 4

# Filesystem rights, with the ABI that introduced each.
EXECUTE: Final = 1 << 0
WRITE_FILE: Final = 1 << 1
READ_FILE: Final = 1 << 2
READ_DIR: Final = 1 << 3
REMOVE_DIR: Final = 1 << 4
REMOVE_FILE: Final = 1 << 5
MAKE_CHAR: Final = 1 << 6
MAKE_DIR: Final = 1 << 7
MAKE_REG: Final = 1 << 8
MAKE_SOCK: Final = 1 << 9
MAKE_FIFO: Final = 1 << 10
MAKE_BLOCK: Final = 1 << 11
MAKE_SYM: Final = 1 << 12
REFER: Final = 1 << 13  # ABI 2: link or rename a file into another directory
TRUNCATE: Final = 1 << 14  # ABI 3
IOCTL_DEV: Final = 1 << 15  # ABI 5
_FS_BY_ABI: Final = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 5: (1 << 16) - 1}
_FILE_ONLY: Final = EXECUTE | WRITE_FILE | READ_FILE | TRUNCATE | IOCTL_DEV  # valid on a file

NET_BIND_TCP: Final = 1 << 0  # ABI 4
NET_CONNECT_TCP: Final = 1 << 1
SCOPE_ABSTRACT_UNIX_SOCKET: Final = 1 << 0  # ABI 6
SCOPE_SIGNAL: Final = 1 << 1

# What the sandbox grants: code and libraries are read, never executed (no execve at all);
# the private data directory gets everything a program needs to keep files, and no special
# files (devices, sockets, FIFOs) or symlinks.
FS_READ: Final = READ_FILE | READ_DIR
FS_WRITE_TREE: Final = (
    READ_FILE
    | READ_DIR
    | WRITE_FILE
    | TRUNCATE
    | MAKE_REG
    | MAKE_DIR
    | REMOVE_FILE
    | REMOVE_DIR
    | REFER
)


class LandlockError(OSError):
    """The kernel refused a Landlock call (or has no Landlock)."""


class _RulesetAttr(ctypes.Structure):
    _fields_ = (
        ("handled_access_fs", ctypes.c_uint64),
        ("handled_access_net", ctypes.c_uint64),
        ("scoped", ctypes.c_uint64),
    )


class _NetPortAttr(ctypes.Structure):
    _pack_ = 1  # packed, as the path rule's
    _fields_ = (("allowed_access", ctypes.c_uint64), ("port", ctypes.c_uint64))


class _PathBeneathAttr(ctypes.Structure):
    _pack_ = 1  # the kernel's struct is __attribute__((packed)): 12 bytes
    _fields_ = (("allowed_access", ctypes.c_uint64), ("parent_fd", ctypes.c_int32))


Rule = tuple[str, int]  # (path, rights)


def abi() -> int:
    """The Landlock ABI version this kernel offers; 0 if it has none (or it is disabled)."""
    version = _libc.syscall(_SYS_CREATE_RULESET, None, 0, _CREATE_RULESET_VERSION)
    return max(int(version), 0)


def _fs_rights(version: int) -> int:
    return _FS_BY_ABI[max(v for v in _FS_BY_ABI if v <= version)]


def _fail(what: str) -> LandlockError:
    errno = ctypes.get_errno()
    return LandlockError(errno, f"landlock {what}: {os.strerror(errno)}")


def restrict_self(
    rules: Iterable[Rule],
    *,
    deny_tcp: bool = True,
    scope: bool = True,
    connect_ports: Iterable[int] = (),
) -> int:
    """Confine this process to `rules`, denying every handled right they do not grant, save a
    TCP connect to one of `connect_ports` (an MCP server's proxy: `lineup.sdk.mcp_network`).

    Needs no_new_privs (or CAP_SYS_ADMIN). Raises LandlockError; a path that does not exist is
    skipped. Returns the ABI used. The caller must be single-threaded: Landlock binds the
    calling thread and the threads it creates afterwards.
    """
    version = abi()
    if version < 1:
        raise LandlockError(0, "landlock is not available")
    handled_fs = _fs_rights(version)
    attr = _RulesetAttr(handled_fs, 0, 0)
    size = 8
    if deny_tcp and version >= 4:
        attr.handled_access_net = NET_BIND_TCP | NET_CONNECT_TCP
        size = 16
    if scope and version >= 6:
        attr.scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL
        size = 24
    ruleset = _libc.syscall(_SYS_CREATE_RULESET, ctypes.byref(attr), size, 0)
    if ruleset < 0:
        raise _fail("create_ruleset")
    try:
        for path, rights in rules:
            _add_path_rule(ruleset, path, rights & handled_fs)
        for port in connect_ports:
            if not attr.handled_access_net:
                raise LandlockError(0, "landlock cannot grant a port without its TCP rights")
            net = _NetPortAttr(NET_CONNECT_TCP, port)
            if _libc.syscall(_SYS_ADD_RULE, ruleset, _RULE_NET_PORT, ctypes.byref(net), 0) != 0:
                raise _fail("add_rule(net_port)")
        if _libc.syscall(_SYS_RESTRICT_SELF, ruleset, 0) != 0:
            raise _fail("restrict_self")
    finally:
        os.close(ruleset)
    return version


def _add_path_rule(ruleset: int, path: str, rights: int) -> None:
    try:
        fd = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except FileNotFoundError:
        return  # e.g. /lib64 on a merged-/usr system without it: nothing to grant
    try:
        if not os.path.isdir(path):
            rights &= _FILE_ONLY  # a directory right on a file is EINVAL
        beneath = _PathBeneathAttr(rights, fd)
        if _libc.syscall(_SYS_ADD_RULE, ruleset, _RULE_PATH_BENEATH, ctypes.byref(beneath), 0):
            raise _fail(f"add_rule {path}")
    finally:
        os.close(fd)


def carve(tree: Path, hole: Path) -> list[Path]:
    """Paths that together cover `tree` except `hole` and what is beneath it.

    Landlock cannot subtract, so a grant on a tree that contains the data directory (a data dir
    inside the repository, say) is replaced by grants on the tree's other branches. `tree` is
    returned unchanged when it does not contain `hole`; nothing when `hole` contains `tree`.
    """
    if hole == tree or tree.is_relative_to(hole):
        return []
    if not hole.is_relative_to(tree):
        return [tree]
    pieces: list[Path] = []
    node = tree
    for part in hole.relative_to(tree).parts:
        try:
            siblings = sorted(os.listdir(node))
        except OSError:
            return pieces  # unreadable: grant nothing more rather than too much
        # A symlink is left out: a rule follows it, and would grant wherever it points.
        pieces += [
            node / name for name in siblings if name != part and not os.path.islink(node / name)
        ]
        node = node / part
    return pieces
