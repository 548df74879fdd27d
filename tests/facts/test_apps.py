"""An app's source and state (`facts/apps.py`): the order of an installed app's checks, the
state a refusal stands for, and the store's schema holding exactly the states defined there."""

from __future__ import annotations

from typing import get_args

import apsw
import pytest

from lineup.actors.kernel import ErrorCode
from lineup.facts.apps import CHECKS, AppCheck, AppSource, AppState, state_of
from lineup.tests.actors.store._harness import memory_database


def test_every_check_is_made_once_and_the_cheap_ones_before_the_cache_is_hashed() -> None:
    assert [check for check, _, _ in CHECKS] == list(get_args(AppCheck))
    assert CHECKS[-1][0] == "cache_verified"


@pytest.mark.parametrize(("check", "state", "code"), CHECKS)
def test_a_failed_check_gives_a_state_its_code_stands_for(
    check: AppCheck, state: AppState, code: ErrorCode
) -> None:
    assert state_of(code) == state
    assert state != "active"


def test_no_refusal_is_active_and_a_revocation_is_unavailable() -> None:
    assert state_of(None) == "active"
    assert state_of(ErrorCode.REVOKED) == "unavailable"


def put_row(conn: apsw.Connection, source: str, state: str) -> None:
    conn.execute(
        "INSERT INTO registry (app_scope, version, manifest, installed_at, updated_at, source,"
        " state) VALUES (?, '1.0', '{}', 0, 0, ?, ?)",
        (f"{source}-{state}", source, state),
    )


def test_the_store_holds_every_source_and_state_defined_and_no_other() -> None:
    conn = memory_database()
    try:
        for source in get_args(AppSource):
            for state in get_args(AppState):
                put_row(conn, source, state)
        for source, state in (("system", "active"), ("bundled", "retired")):
            with pytest.raises(apsw.ConstraintError):
                put_row(conn, source, state)
    finally:
        conn.close()
