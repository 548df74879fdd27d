"""One operation on the app registry, as focus keeps it while it moves. No I/O.

The machine it moves by (its states, the table of legal moves, `IllegalOperationMove`) is
`lineup.facts.operations`, which the store, the SDK and `lineup apps` read too.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from lineup.actors.kernel.errors import ErrorCode
from lineup.facts.operations import FINAL, IllegalOperationMove, OperationState, next_state

__all__ = ["IllegalOperationMove", "Operation"]


@dataclass(frozen=True)
class Operation:
    operation_id: str
    app_scope: str
    kind: str
    state: OperationState = "requested"
    code: str | None = None

    def start(self) -> Operation:
        return replace(self, state=next_state(self.state, "start"))

    def complete(self) -> Operation:
        return replace(self, state=next_state(self.state, "complete"))

    def fail(self, code: ErrorCode) -> Operation:
        return replace(self, state=next_state(self.state, "fail"), code=code.value)

    @property
    def final(self) -> bool:
        return self.state in FINAL
