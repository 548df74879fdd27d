"""An operation as focus keeps it (`actors/focus/_operations.py`): it moves by the machine."""

from __future__ import annotations

import pytest

from lineup.actors.focus._operations import IllegalOperationMove, Operation
from lineup.actors.kernel import ErrorCode


def test_an_operation_runs_then_completes_or_fails_with_its_code() -> None:
    op = Operation("op-1", "notes", "install")
    assert op.start().complete().state == "completed"
    failed = op.start().fail(ErrorCode.REVOKED)
    assert (failed.state, failed.code, failed.final) == ("failed", "revoked", True)
    assert op.fail(ErrorCode.APP_PROTECTED).state == "failed"  # refused before it ran


def test_a_requested_operation_cannot_complete_without_running() -> None:
    with pytest.raises(IllegalOperationMove):
        Operation("op-1", "notes", "install").complete()
