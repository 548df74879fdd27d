"""The supervisor: process tree, zygote spawn, the bus broker and ACL, restart policy, CLI.

The public names are exported lazily: the zygote imports `lineup.supervisor._zygote` before it
forks the runtime's children, and must not load the tree, the broker and the CLI with it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from lineup._lazy import exports

if TYPE_CHECKING:
    from ._restarts import Escalation
    from ._spec import ChildSpec, Intensity, Restart, Strategy, runtime_specs
    from ._tree import Supervisor

__all__ = [
    "ChildSpec",
    "Escalation",
    "Intensity",
    "Restart",
    "Strategy",
    "Supervisor",
    "runtime_specs",
]

_HOMES = {
    "ChildSpec": "._spec",
    "Intensity": "._spec",
    "Restart": "._spec",
    "Strategy": "._spec",
    "runtime_specs": "._spec",
    "Escalation": "._restarts",
    "Supervisor": "._tree",
}


__getattr__ = exports(__name__, _HOMES)
