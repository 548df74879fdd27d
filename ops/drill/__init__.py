"""`lineup drill`: crash-recovery drills, Jepsen style (issue 6).

The embedded runtime runs under a mixed load (an Agent through the real AppServer, a user at
the real Shell socket, the Agent's standard interactions answered, dismissed or left to expire)
while seeded faults hit it — SIGKILL and SIGSTOP of every child, the AppServer included, and a
cut, slow or failing link through a proxy the drill controls — and afterwards the AppServer's
own record and the runtime's store must show that nothing was lost or duplicated. See `cli.py`
for the command and `_check.py` for the invariants.
"""

from ._check import Evidence, Expected, Invariant, check
from ._faults import KINDS, TARGETS, Fault, plan
from ._runner import DrillOptions, run_drill

__all__ = [
    "KINDS",
    "TARGETS",
    "DrillOptions",
    "Evidence",
    "Expected",
    "Fault",
    "Invariant",
    "check",
    "plan",
    "run_drill",
]
