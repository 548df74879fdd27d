"""The supervisor: process tree, zygote spawn, the bus broker and ACL, restart policy, CLI."""

from ._spec import ChildSpec, Intensity, Restart, Strategy, runtime_specs
from ._tree import Escalation, Supervisor

__all__ = [
    "ChildSpec",
    "Escalation",
    "Intensity",
    "Restart",
    "Strategy",
    "Supervisor",
    "runtime_specs",
]
