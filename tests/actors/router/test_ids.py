"""The ids the runtime mints (`actors/router/_ids.py`): all in its own namespace, each fits the
wire, and two different calls never share one."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from lineup.actors.router import _ids as ids

CALL_IDS = st.text(min_size=1, max_size=200)
STATUSES = st.sampled_from(["accepted", "starting", "activation_ready", "activation_cancelled"])


@given(CALL_IDS, STATUSES)
def test_every_id_of_a_call_is_the_runtimes_and_fits_the_wire(call_id: str, status: str) -> None:
    minted = (
        ids.terminal_id(call_id),
        ids.receipt_id(call_id, status),
        ids.progress_id(call_id, 2**63),
        ids.inventory_id(call_id, 10**9),
    )
    assert all(ids.is_runtime(i) and len(i) <= ids.MAX_ID for i in minted)
    assert len(set(minted)) == len(minted)


@given(CALL_IDS, CALL_IDS)
def test_two_calls_never_share_an_id(first: str, second: str) -> None:
    if first != second:
        assert ids.terminal_id(first) != ids.terminal_id(second)
        assert ids.receipt_id(first, "accepted") != ids.receipt_id(second, "accepted")


def test_a_users_message_gets_a_fresh_id_of_the_runtime_each_time() -> None:
    minted = {ids.message_id() for _ in range(100)}
    assert len(minted) == 100
    assert all(ids.is_runtime(i) for i in minted)


def test_what_an_app_or_agent_would_choose_is_not_the_runtimes() -> None:
    assert not any(ids.is_runtime(i) for i in ("final:c1", "receipt:c1:accepted", "user-1"))
