"""Where a child is confined, after fork and before any actor or MiniApp code runs.

This is the hook the MiniApp sandbox issue fills in (DESIGN §8). The order there is fixed:
scrubbed environment → close inherited fds (done by the zygote already) → new network namespace
→ Landlock (needs no_new_privs) → rlimits → drop capabilities → seccomp last (it denies unshare).
Runtime actors are trusted and get no sandbox; `boot["config"]["sandbox"]` selects one.
"""

from __future__ import annotations

from typing import Any

__all__ = ["prepare_child"]


def prepare_child(boot: dict[str, Any]) -> None:
    """Apply the sandbox named in the child's boot config. Raises if it cannot be applied."""
    policy = (boot.get("config") or {}).get("sandbox")
    if policy is None:
        return
    raise NotImplementedError(f"sandbox policy {policy!r} is not implemented yet")
